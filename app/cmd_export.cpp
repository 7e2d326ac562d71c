// `shardscope export`: a checked program as a PyTorch DTensor script, a JAX script or LaTeX.
#include "commands.hpp"
#include "frontend/document.hpp"
#include "frontend/mesh_spec.hpp"
#include "inputs.hpp"

#include "codegen/export.hpp"
#include "parser/parser.hpp"
#include "semantics/checker.hpp"

#include <iostream>
#include <memory>

namespace shardscope::app {

namespace {

struct ExportCliOptions {
    std::string to;
    std::string file;
    std::string output;
    std::string mesh;
    bool small = false;
};

int run_export(const ExportCliOptions& o) {
    const auto target = codegen::parse_export_target(o.to);
    if (!target) {
        std::cerr << "shardscope: error: --to must be torch, jax or latex\n";
        return kExitUsage;
    }
    if (!mesh_option_ok(o.mesh, std::cerr)) return kExitUsage;
    auto source = load_source(o.file);
    if (!source) return kExitUsage;
    auto parsed = parser::parse(*source);
    const bool color = stderr_color();
    for (const auto& d : parsed.diagnostics)
        std::cerr << format_diagnostic(*source, d, color);
    if (parsed.has_errors()) {
        std::cerr << "shardscope: error: " << o.file << " has syntax errors; nothing exported\n";
        return kExitInputErrors;
    }
    semantics::CheckOptions co;
    co.text = source->text();
    co.small_defaults = o.small;
    co.ignore_dims = o.small;
    if (!o.mesh.empty()) co.mesh = frontend::parse_mesh_spec(o.mesh);
    // Open shardings (`f_?`) run as check resolves them (frontend::check_program, note S402).
    const auto plan = frontend::check_program(parsed.program, co);
    if (plan.errors() > 0) {
        for (const auto& d : plan.diagnostics)
            if (d.severity != Severity::Note) std::cerr << format_diagnostic(*source, d, color);
        std::cerr << "shardscope: error: " << o.file << " has errors; nothing exported\n";
        return kExitInputErrors;
    }
    codegen::ExportOptions eo;
    eo.source = o.file;
    eo.command = "shardscope export --to " + o.to + (o.small ? " --small" : "") +
                 (o.mesh.empty() ? "" : " --mesh " + o.mesh) + " " + o.file;
    std::string text;
    try {
        text = codegen::export_program(parsed.program, plan, *target, eo);
    } catch (const codegen::ExportError& e) {
        // A statement the target cannot express: at its place, as check's diagnostics are.
        if (e.range.line == 0) {
            std::cerr << "shardscope: error: " << e.what() << "\n";
        } else {
            Diagnostic d;
            d.range = e.range;
            d.message = e.what();
            std::cerr << format_diagnostic(*source, d, color);
            std::cerr << "shardscope: error: " << o.file << " cannot be exported to " << o.to
                      << "; nothing exported\n";
        }
        return kExitInputErrors;
    } catch (const std::exception& e) {
        std::cerr << "shardscope: error: " << e.what() << "\n";
        return kExitInputErrors;
    }
    if (o.output.empty() || o.output == "-") {
        std::cout << text << std::flush;
    } else if (!write_file_atomically(o.output, text)) {
        std::cerr << "shardscope: error: cannot write '" << o.output << "'\n";
        return kExitUsage;
    }
    return kExitOk;
}

} // namespace

void add_export_command(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<ExportCliOptions>();
    auto* cmd = app.add_subcommand(
        "export", "Write a program and its plan as a PyTorch DTensor script (torchrun), a JAX "
                  "script (CPU devices) or LaTeX that parses back");
    cmd->add_option("--to", opts->to, "torch, jax or latex")
        ->required()
        ->check(CLI::IsMember({"torch", "jax", "latex"}));
    cmd->add_option("file", opts->file, "A notation file (- for stdin)")->required();
    cmd->add_option("-o,--output", opts->output, "Write here instead of standard output");
    cmd->add_flag("--small", opts->small,
                  "Ignore the dim declarations (small ranges, as exec --small): scripts that run "
                  "in seconds on CPU devices");
    cmd->add_option("--mesh", opts->mesh, "Override the mesh: 4, 2x4, or dp=2,tp=4")
        ->check([](const std::string& v) { return mesh_value_problem(v); });
    cmd->callback([opts, &exit_code] { exit_code = run_export(*opts); });
}

} // namespace shardscope::app
