// `shardscope parse`: report parse errors, or dump the AST as JSON.
#include "commands.hpp"
#include "inputs.hpp"

#include "parser/json.hpp"
#include "parser/parser.hpp"

#include <iostream>
#include <memory>

namespace shardscope::app {

namespace {

struct ParseOptions {
    std::vector<std::string> files;
    bool json = false;
};

int run_parse(const ParseOptions& o) {
    auto files = expand_inputs(o.files);
    if (!files) return kExitUsage;
    int rc = kExitOk;
    nlohmann::json doc = {{"version", 1}, {"files", nlohmann::json::array()}};
    const bool color = stderr_color();
    for (const auto& path : *files) {
        auto source = load_source(path);
        if (!source) return kExitUsage;
        const auto result = parser::parse(*source);
        if (result.has_errors()) rc = kExitInputErrors;
        if (o.json) {
            nlohmann::json diags = nlohmann::json::array();
            for (const auto& d : result.diagnostics)
                diags.push_back(parser::to_json(d));
            auto program = parser::to_json(result.program);
            doc["files"].push_back(
                {{"path", path}, {"items", program["items"]}, {"diagnostics", diags}});
        } else {
            for (const auto& d : result.diagnostics)
                std::cerr << format_diagnostic(*source, d, color);
            if (!result.has_errors()) std::cout << path << ": ok\n";
        }
    }
    if (o.json) std::cout << doc.dump(2) << "\n";
    return rc;
}

} // namespace

void add_parse_command(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<ParseOptions>();
    auto* cmd = app.add_subcommand("parse", "Parse notation files; report errors or dump the AST");
    cmd->add_option("files", opts->files, "Files or directories (searched for .ein); - for stdin")
        ->required();
    cmd->add_flag("--json", opts->json, "Print the AST as one JSON document");
    cmd->callback([opts, &exit_code] { exit_code = run_parse(*opts); });
}

} // namespace shardscope::app
