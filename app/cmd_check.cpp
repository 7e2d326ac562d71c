// `shardscope check`: placements, collectives and costs of notation files, for people and CI.
#include "commands.hpp"
#include "inputs.hpp"

#include "parser/json.hpp"
#include "parser/parser.hpp"
#include "semantics/checker.hpp"
#include "semantics/report.hpp"

#include <iostream>
#include <memory>

namespace shardscope::app {

namespace {

struct CheckOptions {
    std::vector<std::string> files;
    bool json = false;
    bool strict = false;
    bool quiet = false;
    std::string mesh;
};

int run_check(const CheckOptions& o) {
    if (!mesh_option_ok(o.mesh, std::cerr)) return kExitUsage;
    auto files = expand_inputs(o.files);
    if (!files) return kExitUsage;
    int rc = kExitOk;
    const bool color = stderr_color();
    const bool out_color = terminal_color(1);
    nlohmann::json doc = {{"version", 1}, {"files", nlohmann::json::array()}};
    int total_errors = 0, total_warnings = 0, total_statements = 0;
    for (const auto& path : *files) {
        auto source = load_source(path);
        if (!source) return kExitUsage;
        const auto parsed = parser::parse(*source);
        semantics::Plan plan;
        if (parsed.has_errors()) {
            plan.diagnostics = parsed.diagnostics;
            plan.diagnostics.push_back({Severity::Note,
                                        "S999",
                                        {},
                                        "the checker did not run: fix the syntax errors first",
                                        {}});
        } else {
            semantics::CheckOptions co;
            co.strict = o.strict;
            if (!o.mesh.empty()) co.mesh = o.mesh;
            co.text = source->text();
            plan = semantics::check(parsed.program, co);
            plan.diagnostics.insert(plan.diagnostics.begin(), parsed.diagnostics.begin(),
                                    parsed.diagnostics.end());
        }
        std::stable_sort(plan.diagnostics.begin(), plan.diagnostics.end(),
                         [](const auto& a, const auto& b) { return a.range.line < b.range.line; });
        total_errors += plan.errors();
        total_warnings += plan.warnings();
        total_statements += static_cast<int>(plan.statements.size());
        if (plan.errors() > 0) rc = kExitInputErrors;
        if (o.json) {
            doc["files"].push_back(semantics::plan_to_json(plan, path));
            continue;
        }
        if (!o.quiet) std::cout << semantics::format_plan(plan, path, out_color) << std::flush;
        for (const auto& d : plan.diagnostics)
            if (!o.quiet || d.severity != Severity::Note)
                std::cerr << format_diagnostic(*source, d, color);
    }
    if (o.json) {
        std::cout << doc.dump(2) << "\n";
    } else {
        std::cerr << files->size() << (files->size() == 1 ? " file, " : " files, ")
                  << total_statements << " statements: " << total_errors
                  << (total_errors == 1 ? " error, " : " errors, ") << total_warnings
                  << (total_warnings == 1 ? " warning\n" : " warnings\n");
    }
    return rc;
}

} // namespace

void add_check_command(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<CheckOptions>();
    auto* cmd =
        app.add_subcommand("check", "Infer placements, collectives and costs; check expectations");
    cmd->add_option("files", opts->files, "Files or directories (searched for .ein); - for stdin")
        ->required();
    cmd->add_flag("--json", opts->json, "Print one JSON document (schema version 1)");
    cmd->add_flag(
        "--strict", opts->strict,
        "Every implicit redistribution or chosen fix is an error: collectives must follow "
        "from the statement as written, or be written explicitly");
    cmd->add_option("--mesh", opts->mesh, "Override the mesh: 4, 2x4, or dp=2,tp=4");
    cmd->add_flag("--quiet,-q", opts->quiet, "Print only errors and warnings");
    cmd->callback([opts, &exit_code] { exit_code = run_check(*opts); });
}

} // namespace shardscope::app
