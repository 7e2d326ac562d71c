// Notation where it lives: the ```ein fenced blocks of Markdown and the math environments of
// LaTeX and Markdown (\begin{align}...\end{align}, align*, equation, equation*, $$...$$),
// read as a program. The extracted text keeps every kept character at its line and column
// (everything else becomes spaces, line breaks stay), so diagnostics point into the document
// as they stand, with no mapping table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::app {

/// Whether `path` is read as a document: .md, .markdown or .tex.
bool is_document(const std::string& path);

/// Whether the file `path` with `text` is read as a document (its notation extracted):
/// Markdown always; LaTeX when it is a whole document (\documentclass or \begin{document}).
/// A .tex without them is notation in its LaTeX form (as `export --to latex` writes it:
/// declarations as plain lines), read as it stands.
bool read_as_document(const std::string& path, const std::string& text);

/// One ```ein (or ~~~ein) fenced block of a Markdown document.
struct FencedBlock {
    std::size_t begin = 0, end = 0; ///< byte range of its content in the document
    std::uint32_t first_line = 0;   ///< 1-based line of its first content line
    std::uint32_t indent = 0;       ///< spaces before its opening fence (0-3)
};

/// The content of `fence` in `document` as CommonMark reads it: up to `fence.indent` spaces
/// removed from the start of each line (a fence in a list item is indented with its item).
std::string fence_content(const std::string& document, const FencedBlock& fence);

/// `content` written back into a fence indented `indent` spaces: each line that is not
/// empty gets them in front.
std::string indent_fence_content(const std::string& content, std::uint32_t indent);

/// One math environment of a document (`$$`, \begin{align}, align*, equation, equation*).
struct MathRegion {
    std::uint32_t line = 0, column = 0; ///< 1-based, of its opening delimiter (code points)
    std::string opening;                ///< "$$" or "\begin{align}"
};

/// A document's notation: `text` has the document's lines and columns; `fences` are its
/// ```ein blocks (Markdown only); `math_regions` counts its math environments, `math` says
/// where they open.
struct ExtractedNotation {
    std::string text;
    std::vector<FencedBlock> fences;
    int math_regions = 0;
    std::vector<MathRegion> math;
    bool declares_mesh = false; ///< a line of the notation starts with 'mesh'
};

/// Extracts the notation of the document `path` (its extension says Markdown or LaTeX).
ExtractedNotation extract_notation(const std::string& path, const std::string& text);

/// Whether a document found in a directory holds notation: an ```ein block, or math
/// environments of which one declares a mesh (other maths is not shardscope's).
bool contains_notation(const ExtractedNotation& doc);

} // namespace shardscope::app
