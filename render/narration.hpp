// Teaching mode's narration: a sample's comments, each block attached to the statement that
// follows it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::render {

struct Narration {
    std::uint32_t line = 0; ///< 1-based line of the statement the comment explains (0: none)
    std::string comment;    ///< without '#': a paragraph's lines joined by spaces, paragraphs
                            ///< (split by an empty comment line) by a blank line
    std::string statement;  ///< the statement's lines (until the next comment or blank line)
};

/// Blocks of `#` comments and the statement lines after each. The file's first block (its
/// title) is a block too, with the lines after it. A "Source:" line and its indented
/// continuation lines are left out (references for the file's reader, not narration).
std::vector<Narration> narration(std::string_view text);

} // namespace shardscope::render
