// A source text with a line index, and diagnostics positioned in it.
#pragma once

#include "ast.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope {

enum class Severity { Error, Warning, Note };

/// One message about the input: stable code, range, text, and an optional fix.
struct Diagnostic {
    Severity severity = Severity::Error;
    std::string code; ///< stable, e.g. "P103" (parser) or "S201" (semantics)
    ast::SourceRange range;
    std::string message;
    std::string fix; ///< empty when there is no suggestion
    /// Equal diagnostics say the same thing at the same place.
    bool operator==(const Diagnostic& o) const {
        return severity == o.severity && code == o.code && range.same_place(o.range) &&
               message == o.message && fix == o.fix;
    }
};

const char* severity_name(Severity s);

/// A named text with a line index; maps byte offsets to 1-based line and code-point column.
class SourceFile {
public:
    SourceFile(std::string name, std::string text);

    const std::string& name() const { return name_; }
    const std::string& text() const { return text_; }

    /// A range covering bytes [offset, offset + length).
    ast::SourceRange range(std::size_t offset, std::size_t length) const;
    /// The line that holds byte `offset`: for callers that position many ranges on one line
    /// (the parser's converter). A range [o, o + n) with `start <= o` and `o + n <= end` on an
    /// ASCII line is {o, n, line, o - start + 1, line, o - start + 1 + n}, as range() gives.
    struct LineSpan {
        std::size_t start = 1; ///< the line's first byte
        std::size_t end = 0;   ///< the offset of its newline, or the text's size on the last line
        std::uint32_t line = 0;
        bool ascii = false;
    };
    LineSpan line_span(std::size_t offset) const;
    /// The text of 1-based line `line`, without its newline.
    std::string_view line_text(std::uint32_t line) const;
    std::uint32_t line_count() const { return static_cast<std::uint32_t>(line_starts_.size()); }

private:
    std::string name_;
    std::string text_;
    std::vector<std::size_t> line_starts_;
    std::vector<char> line_is_ascii_;   ///< bytes, not bits: read for every AST node
    mutable std::size_t line_hint_ = 0; ///< index of the line of the last lookup
};

/// `file:line:col: severity: message [code]`, the source line, a caret line under the
/// range, and `fix: ...` when there is one. ANSI colours when `color`.
std::string format_diagnostic(const SourceFile& file, const Diagnostic& d, bool color = false);

/// Byte offset of the first invalid UTF-8 sequence, if any.
std::optional<std::size_t> find_invalid_utf8(std::string_view text);

/// Number of code points in a valid UTF-8 string.
std::size_t utf8_length(std::string_view text);

} // namespace shardscope
