// `shardscope fmt`: print programs in canonical ASCII (or Unicode) form.
#include "commands.hpp"
#include "inputs.hpp"

#include "parser/parser.hpp"
#include "parser/printer.hpp"

#include <algorithm>
#include <iostream>
#include <memory>

namespace shardscope::app {

namespace {

struct FmtOptions {
    std::vector<std::string> files;
    bool unicode = false;
    bool write = false;
    bool check = false;
};

int run_fmt(const FmtOptions& o) {
    if (o.write && std::find(o.files.begin(), o.files.end(), "-") != o.files.end()) {
        std::cerr << "shardscope: error: --write cannot rewrite standard input (-): leave out "
                     "--write to print the formatted text\n";
        return kExitUsage;
    }
    auto files = expand_inputs(o.files);
    if (!files) return kExitUsage;
    int rc = kExitOk;
    const bool color = stderr_color();
    for (const auto& path : *files) {
        auto source = load_source(path);
        if (!source) return kExitUsage;
        const auto result = parser::parse(*source);
        for (const auto& d : result.diagnostics)
            std::cerr << format_diagnostic(*source, d, color);
        if (result.has_errors()) {
            // Printing what parsed would silently drop the bad statements: refuse.
            std::cerr << path << ": not formatted: fix the errors above first\n";
            rc = kExitInputErrors;
            continue;
        }
        const auto text = parser::print(result.program, {o.unicode});
        if (o.check) {
            if (text != source->text()) {
                std::cout << path << ": not in canonical form\n";
                rc = kExitInputErrors;
            }
        } else if (o.write) {
            if (text != source->text() && !write_file_atomically(path, text)) {
                std::cerr << "shardscope: error: cannot write '" << path << "'\n";
                return kExitUsage;
            }
        } else {
            if (files->size() > 1) std::cout << "# ==> " << path << " <==\n";
            std::cout << text;
        }
    }
    return rc;
}

} // namespace

void add_fmt_command(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<FmtOptions>();
    auto* cmd = app.add_subcommand("fmt", "Print notation files in canonical form");
    cmd->add_option("files", opts->files, "Files or directories (searched for .ein); - for stdin")
        ->required();
    cmd->add_flag("--unicode,-u", opts->unicode, "Pretty Unicode form (r₀, W¹, d′, φ)");
    auto* write = cmd->add_flag("--write,-w", opts->write, "Rewrite the files in place");
    cmd->add_flag("--check", opts->check, "Exit 1 if a file is not in canonical form")
        ->excludes(write);
    cmd->callback([opts, &exit_code] { exit_code = run_fmt(*opts); });
}

} // namespace shardscope::app
