// A program text checked as `shardscope check` checks it: what `check` reports, the GUI
// re-checks on every edit, the REPL checks each entry with, `render` draws, and the keystroke
// benchmark times. One sequence for all: parse, check what parses, merge, sort.
#pragma once

#include "parser/parser.hpp"
#include "parser/source.hpp"
#include "semantics/checker.hpp"
#include "semantics/plan.hpp"
#include "semantics/search.hpp"

#include <memory>
#include <optional>
#include <string>

namespace shardscope::frontend {

struct CheckedText {
    std::shared_ptr<const SourceFile> source;
    parser::ParseResult parsed;
    semantics::Plan plan; ///< diagnostics: the parser's and the checker's, by line
    /// The tree as written when it had open shardings (`f_?`): `parsed.program` is then the
    /// resolved one the plan belongs to, and this keeps the markers (for the strategy search).
    std::optional<ast::Program> open_program;
    /// The tree with its open shardings, as the strategy search must read it.
    const ast::Program& written() const { return open_program ? *open_program : parsed.program; }
    bool syntax_ok() const { return !parsed.has_errors(); }
    /// Whether the checker ran (it does not when a declaration line has a syntax error).
    bool checked = false;
};

/// Parses and checks `source` as `shardscope check` does: statements that parse are checked
/// even where others have syntax errors (a note, S999, says which were not), unless a
/// declaration line (mesh, dim, split, ...) failed, which would make every check wrong; "did
/// you mean" notes for misspelt tensors (S132) join the parser's for functions (P108); the
/// diagnostics are sorted by line. `options.text` is set to the source's text. Open
/// shardings (`f_?`) are resolved first (semantics::resolve_open: the cheapest consistent
/// choice on the written mesh, note S402): `parsed.program` is the resolved tree. With `cache`
/// (kept from one edit to the next), unchanged statements keep their plans.
CheckedText check_source(std::shared_ptr<const SourceFile> source,
                         semantics::CheckOptions options = {},
                         semantics::CheckCache* cache = nullptr);

/// Open shardings (`f_?`) chosen as `check` chooses them, at the declared sizes whatever
/// `options` say of sizes: `exec --small`, `export --small`, `grad --small` and their
/// references run the layouts chosen for the real sizes at small ones, instead of choosing
/// again for the small ones.
semantics::ResolvedOpen resolve_at_declared_sizes(const ast::Program& program,
                                                  const semantics::CheckOptions& options);

/// semantics::check of a tree the caller parsed (exec, export), with its open shardings
/// (`f_?`) resolved in place first as check_source resolves them: `program` becomes the
/// resolved tree, and the note naming the choice (S402) and any error of the resolution join
/// the plan's diagnostics.
semantics::Plan check_program(ast::Program& program, const semantics::CheckOptions& options);

/// check_source of `text` named `name`.
CheckedText check_text(const std::string& name, const std::string& text,
                       semantics::CheckOptions options = {},
                       semantics::CheckCache* cache = nullptr);

} // namespace shardscope::frontend
