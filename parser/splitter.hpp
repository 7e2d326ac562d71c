// Cuts a source text into statements and comments (NOTATION.md section 2), so that one bad
// statement never stops the rest of the file from being read.
#pragma once

#ifdef SHARDSCOPE_NO_GRAMMAR
#error                                                                                             \
    "this target reads trees, not text: parse through the front door (frontend/), see parser/CMakeLists.txt"
#endif

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::parser {

/// One piece of a source text, in order of appearance.
struct Piece {
    enum class Kind {
        Statement, ///< text of one statement: bytes [begin, end)
        Comment,   ///< `# ...`, `% ...`, or a LaTeX caption `\textrm{...}`; `text` is its content
        LineEnd,   ///< a newline that ends a line (continuation newlines are not reported)
    };
    Kind kind;
    std::size_t begin = 0;
    std::size_t end = 0;
    std::string text;
};

/// Statements end at a newline, `;`, or LaTeX `\\`; a line ending in `\` continues; `#` and
/// `%` start comments; `\textrm{...}`/`\text{...}` outside braces, unless it holds an
/// expectation `(...)`, is a caption: it ends the statement and is kept as a comment.
std::vector<Piece> split_statements(std::string_view text);

} // namespace shardscope::parser
