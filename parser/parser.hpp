// Reading notation text into an ast::Program, with positioned diagnostics.
#pragma once

#ifdef SHARDSCOPE_NO_GRAMMAR
#error                                                                                             \
    "this target reads trees, not text: parse through the front door (frontend/), see parser/CMakeLists.txt"
#endif

#include "ast.hpp"
#include "source.hpp"

#include <string>
#include <vector>

namespace shardscope::parser {

/// Context a parse starts from (the REPL passes the functions its session has declared).
struct ParseOptions {
    std::vector<std::string> functions; ///< names declared with `fn` before this text
};

/// The program read from a file, and every problem found. Statements that fail to parse are
/// left out; parsing resumes at the next statement.
struct ParseResult {
    ast::Program program;
    std::vector<Diagnostic> diagnostics;
    bool has_errors() const;
};

/// Parses a whole file.
ParseResult parse(const SourceFile& file, const ParseOptions& options = {});

/// Runs PEGTL's grammar analysis (infinite loops, rules that can match nothing);
/// returns the number of problems found.
std::size_t analyze_grammar(bool verbose = false);

} // namespace shardscope::parser
