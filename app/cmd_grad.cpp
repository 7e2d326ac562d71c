// `shardscope grad`: the backward statements of a program, in the notation, checked.
#include "check_formats.hpp"
#include "commands.hpp"
#include "frontend/gradients.hpp"
#include "frontend/mesh_spec.hpp"
#include "inputs.hpp"

#include "semantics/checker.hpp"
#include "semantics/grad.hpp"
#include "semantics/totals.hpp"

#include <chrono>
#include <iostream>
#include <memory>

namespace shardscope::app {

namespace {

struct GradCliOptions {
    std::string file;
    std::vector<std::string> wrt;
    bool json = false;
    bool plan = false;
    bool small = false;
    std::string mesh;
};

int run_grad(const GradCliOptions& o) {
    if (!mesh_option_ok(o.mesh, std::cerr)) return kExitUsage;
    auto source = load_source(o.file);
    if (!source) return kExitUsage;
    semantics::GradOptions go;
    go.wrt = o.wrt;
    if (!o.mesh.empty()) go.check.mesh = frontend::parse_mesh_spec(o.mesh);
    go.check.small_defaults = o.small;
    go.check.ignore_dims = o.small;
    const auto start = std::chrono::steady_clock::now();
    const auto result = frontend::derive_gradients(*source, go);
    const SourceFile shown(source->name(), result.text.empty() ? source->text() : result.text);
    if (o.json) {
        // check --json's schema: the file's totals and the run's, as check computes them.
        auto file = semantics::gradients_to_json(result, o.file);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        file["totals"] =
            plan_totals(semantics::backward_plan(result), semantics::program_totals(result.plan));
        file["totals"]["check_time_s"] = seconds;
        nlohmann::json doc = {{"version", 1}, {"files", nlohmann::json::array({file})}};
        doc["totals"] = run_totals(doc["files"], seconds, result.errors() > 0);
        std::cout << doc.dump(2) << "\n";
    } else {
        const bool color = stderr_color();
        if (o.plan)
            std::cout << semantics::format_gradient_plans(result, source->name(), terminal_color(1))
                      << std::flush;
        else
            std::cout << result.text << std::flush;
        for (const auto& d : result.diagnostics)
            if (d.severity != Severity::Note || o.plan)
                std::cerr << format_diagnostic(shown, d, color);
        std::cerr << semantics::derived_summary(result) << ": " << result.errors()
                  << (result.errors() == 1 ? " error\n" : " errors\n");
    }
    return result.errors() > 0 ? kExitInputErrors : kExitOk;
}

} // namespace

void add_grad_command(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<GradCliOptions>();
    auto* cmd = app.add_subcommand(
        "grad",
        "Derive the backward statements (gX is the gradient of X; dF the derivative of F) and "
        "check them: prints the program followed by its backward pass");
    cmd->add_option("file", opts->file, "A notation file (- for stdin)")->required();
    cmd->add_option("--wrt", opts->wrt,
                    "Differentiate with respect to these tensors (x, W^0); default: the "
                    "tensors of the file's param lines, else every program input")
        ->expected(1, -1);
    cmd->add_flag("--json", opts->json,
                  "Print check --json's document for the derived statements, each with 'wrt'");
    cmd->add_flag("--plan", opts->plan, "Print the derived statements' plans instead");
    cmd->add_flag("--small", opts->small,
                  "Ignore the dim declarations (small ranges, as exec --small): the output "
                  "then runs under 'shardscope exec --small'");
    cmd->add_option("--mesh", opts->mesh, "Override the mesh: 4, 2x4, or dp=2,tp=4")
        ->check([](const std::string& v) { return mesh_value_problem(v); });
    cmd->callback([opts, &exit_code] { exit_code = run_grad(*opts); });
}

} // namespace shardscope::app
