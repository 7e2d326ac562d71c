// A program text checked as `shardscope check` checks it: what the GUI re-checks on every
// edit, `render` draws, and the keystroke benchmark times.
#pragma once

#include "parser/parser.hpp"
#include "parser/source.hpp"
#include "semantics/checker.hpp"
#include "semantics/plan.hpp"

#include <memory>
#include <string>

namespace shardscope::app {

struct CheckedText {
    std::shared_ptr<const SourceFile> source;
    parser::ParseResult parsed;
    semantics::Plan plan; ///< diagnostics: the parser's, then the checker's, by line
    bool syntax_ok() const { return !parsed.has_errors(); }
};

/// Parses and checks `text`; with syntax errors the checker does not run (a note says so).
/// With `cache` (kept from one edit to the next), unchanged statements keep their plans.
CheckedText check_text(const std::string& name, const std::string& text,
                       semantics::CheckOptions options = {},
                       semantics::CheckCache* cache = nullptr);

} // namespace shardscope::app
