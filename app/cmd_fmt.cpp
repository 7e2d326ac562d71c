// `shardscope fmt`: print programs in canonical ASCII (or Unicode) form.
#include "commands.hpp"
#include "documents.hpp"
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

/// `text` with CRLF line endings (the printer writes LF).
std::string with_crlf(const std::string& text) {
    std::string out;
    out.reserve(text.size() + text.size() / 16);
    for (const char c : text) {
        if (c == '\n') out += '\r';
        out += c;
    }
    return out;
}

/// fmt --check / --write of a Markdown document's ```ein blocks; -1 where `path` is not read
/// as a document.
int fmt_document(const std::string& path, const FmtOptions& o) {
    std::string raw;
    if (const auto why = read_whole_file(path, raw); !why.empty()) {
        std::cerr << "shardscope: error: " << why << "\n";
        return kExitUsage;
    }
    if (!read_as_document(path, raw)) return -1;
    const auto doc = extract_notation(path, raw);
    std::string rewritten = raw;
    int rc = kExitOk;
    // The printer writes LF; a CRLF document gets its blocks back in CRLF, or a rewrite would
    // leave mixed line endings (and --check would find every block non-canonical).
    const std::size_t first_break = raw.find('\n');
    const bool crlf =
        first_break != std::string::npos && first_break > 0 && raw[first_break - 1] == '\r';
    // Last block first, so that earlier offsets stay valid while rewriting.
    for (auto it = doc.fences.rbegin(); it != doc.fences.rend(); ++it) {
        // A block indented with its list item is compared without that indentation and
        // written back with it, so the document keeps its structure.
        std::string block = fence_content(raw, *it);
        byte_order_marks_as_spaces(block);
        const auto parsed = parser::parse(SourceFile(path, block));
        if (parsed.has_errors()) continue; // reported with the whole document's parse
        auto canonical = parser::print(parsed.program, {o.unicode});
        if (crlf) canonical = with_crlf(canonical);
        if (canonical == block) continue;
        if (o.check) {
            std::cout << path << ":" << it->first_line
                      << ": the ```ein block is not in canonical form\n";
            rc = kExitInputErrors;
        }
        rewritten.replace(it->begin, it->end - it->begin,
                          indent_fence_content(canonical, it->indent));
    }
    // LaTeX maths is notation typeset by its author (spacing, \quad, \textrm captions,
    // line breaks): fmt parses it (its syntax errors are reported with the document's
    // parse) but neither checks its form nor rewrites it. Said once per environment, where
    // it opens, so that a clean --check is not read as "the maths is canonical".
    for (const auto& m : doc.math)
        std::cerr << path << ":" << m.line << ":" << m.column << ": note: " << m.opening
                  << " maths left as written: fmt " << (o.write ? "rewrites" : "checks")
                  << " only ```ein blocks (the maths was parsed)\n";
    if (o.write && rewritten != raw && !write_file_atomically(path, rewritten)) {
        std::cerr << "shardscope: error: cannot write '" << path << "'\n";
        return kExitUsage;
    }
    return rc;
}

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
        if (is_document(path) && (o.check || o.write)) {
            // A document: its ```ein blocks are checked or rewritten one by one, in place; its
            // LaTeX maths stays as written. (-1: a .tex of plain notation, formatted below.)
            const int doc_rc = fmt_document(path, o);
            if (doc_rc == kExitUsage) return kExitUsage;
            if (doc_rc >= 0) {
                rc = std::max(rc, doc_rc);
                continue;
            }
        }
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
