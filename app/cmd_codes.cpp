// `shardscope codes`: every diagnostic code, its usual severity and meaning (the table in
// parser/diagnostic_codes.hpp), or one code's row.
#include "commands.hpp"
#include "inputs.hpp"

#include "parser/diagnostic_codes.hpp"

#include <iostream>
#include <memory>

namespace shardscope::app {

namespace {

struct CodesOptions {
    std::vector<std::string> codes;
    bool markdown = false;
};

int run_codes(const CodesOptions& o) {
    if (o.markdown) {
        std::cout << codes_markdown();
        return kExitOk;
    }
    std::vector<const CodeInfo*> rows;
    if (o.codes.empty()) {
        for (const auto& c : diagnostic_codes())
            rows.push_back(&c);
    }
    for (const auto& name : o.codes) {
        const auto* c = find_code(name);
        if (c == nullptr) {
            std::cerr << "shardscope: error: no diagnostic code '" << name
                      << "' (shardscope codes lists them)\n";
            return kExitUsage;
        }
        rows.push_back(c);
    }
    for (const auto* c : rows)
        std::cout << c->name << "  " << severity_name(c->severity) << "  " << c->meaning << "  ["
                  << c->group << "]\n";
    return kExitOk;
}

} // namespace

void add_codes_command(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<CodesOptions>();
    auto* cmd = app.add_subcommand(
        "codes", "List the diagnostic codes: code, usual severity, meaning and group");
    cmd->add_option("codes", opts->codes, "Only these codes (e.g. S106 P120)");
    cmd->add_flag("--markdown", opts->markdown,
                  "The whole table as Markdown, as docs/reference.md lists it");
    cmd->callback([opts, &exit_code] { exit_code = run_codes(*opts); });
}

} // namespace shardscope::app
