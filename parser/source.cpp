#include "source.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace shardscope {

const char* severity_name(Severity s) {
    switch (s) {
    case Severity::Error:
        return "error";
    case Severity::Warning:
        return "warning";
    case Severity::Note:
        return "note";
    }
    return "error";
}

static bool is_continuation(unsigned char c) {
    return (c & 0xC0) == 0x80;
}

std::size_t utf8_length(std::string_view text) {
    return static_cast<std::size_t>(
        std::count_if(text.begin(), text.end(), [](char c) { return !is_continuation(c); }));
}

std::optional<std::size_t> find_invalid_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t n = 0;
        std::uint32_t cp = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3;
            cp = c & 0x07;
        } else {
            return i;
        }
        for (std::size_t k = 1; k <= n; ++k) {
            if (i + k >= s.size() || !is_continuation(static_cast<unsigned char>(s[i + k])))
                return i;
            cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
        }
        // Overlong forms, surrogates and values past U+10FFFF are invalid.
        static constexpr std::uint32_t min_cp[] = {0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[n] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return i;
        i += n + 1;
    }
    return std::nullopt;
}

SourceFile::SourceFile(std::string name, std::string text)
    : name_(std::move(name)), text_(std::move(text)) {
    // Line ends by memchr, and each line's bytes tested for a high bit eight at a time: a
    // byte-by-byte loop cost more than the rest of reading a short statement's line.
    const char* data = text_.data();
    const std::size_t size = text_.size();
    auto ascii = [&](std::size_t from, std::size_t to) {
        std::uint64_t high = 0;
        for (; from + 8 <= to; from += 8) {
            std::uint64_t word;
            std::memcpy(&word, data + from, sizeof word);
            high |= word;
        }
        for (; from < to; ++from)
            high |= static_cast<unsigned char>(data[from]);
        return (high & 0x8080808080808080ull) == 0;
    };
    line_starts_.push_back(0);
    std::size_t start = 0;
    for (;;) {
        const void* nl = start < size ? std::memchr(data + start, '\n', size - start) : nullptr;
        const std::size_t stop =
            nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - data) : size;
        line_is_ascii_.push_back(ascii(start, stop));
        if (!nl) break;
        start = stop + 1;
        line_starts_.push_back(start);
    }
}

namespace {

/// The index of the line (in `starts`, the lines' first bytes) that holds byte `off`.
/// Lookups come in source order, so the line of the last one (`hint`), or the line after it
/// (the next statement's), is the likely answer; a binary search finds any other.
std::size_t line_index(const std::vector<std::size_t>& starts, std::size_t& hint, std::size_t off) {
    auto holds = [&](std::size_t idx) {
        return idx < starts.size() && starts[idx] <= off &&
               (idx + 1 == starts.size() || off < starts[idx + 1]);
    };
    if (holds(hint)) return hint;
    if (holds(hint + 1)) return ++hint;
    const auto it = std::upper_bound(starts.begin(), starts.end(), off);
    return hint = static_cast<std::size_t>(it - starts.begin()) - 1;
}

} // namespace

ast::SourceRange SourceFile::range(std::size_t offset, std::size_t length) const {
    offset = std::min(offset, text_.size());
    length = std::min(length, text_.size() - offset);
    auto locate = [&](std::size_t off, std::uint32_t& line, std::uint32_t& col) {
        const std::size_t idx = line_index(line_starts_, line_hint_, off);
        line = static_cast<std::uint32_t>(idx + 1);
        const auto start = line_starts_[idx];
        const auto prefix = line_is_ascii_[idx]
                                ? off - start
                                : utf8_length(std::string_view(text_).substr(start, off - start));
        col = static_cast<std::uint32_t>(prefix) + 1;
    };
    ast::SourceRange r;
    r.offset = static_cast<std::uint32_t>(offset);
    r.length = static_cast<std::uint32_t>(length);
    locate(offset, r.line, r.column);
    // Most ranges end on the ASCII line they start on: the end column is then arithmetic.
    const auto idx = static_cast<std::size_t>(r.line - 1);
    const auto line_end = idx + 1 < line_starts_.size() ? line_starts_[idx + 1] : text_.size() + 1;
    if (line_is_ascii_[idx] && offset + length < line_end) {
        r.end_line = r.line;
        r.end_column = r.column + static_cast<std::uint32_t>(length);
    } else {
        locate(offset + length, r.end_line, r.end_column);
    }
    return r;
}

SourceFile::LineSpan SourceFile::line_span(std::size_t offset) const {
    offset = std::min(offset, text_.size());
    const std::size_t idx = line_index(line_starts_, line_hint_, offset);
    LineSpan s;
    s.start = line_starts_[idx];
    s.end = idx + 1 < line_starts_.size() ? line_starts_[idx + 1] - 1 : text_.size();
    s.line = static_cast<std::uint32_t>(idx + 1);
    s.ascii = line_is_ascii_[idx] != 0;
    return s;
}

std::string_view SourceFile::line_text(std::uint32_t line) const {
    if (line == 0 || line > line_starts_.size()) return {};
    const auto start = line_starts_[line - 1];
    auto end = line < line_starts_.size() ? line_starts_[line] - 1 : text_.size();
    std::string_view v(text_.data() + start, end - start);
    if (!v.empty() && v.back() == '\r') v.remove_suffix(1);
    return v;
}

namespace {

/// A source line as a diagnostic shows it: whole, or a window of a long one around `column`.
struct ShownLine {
    std::string text;
    long column = 1;      ///< the diagnostic's column within `text`
    long last_column = 1; ///< the last column of `text` that is the line's own
};

ShownLine shown_line(std::string_view line, std::uint32_t column) {
    constexpr long kMax = 160, kBefore = 60, kWindow = 150;
    std::vector<std::size_t> starts; // byte offset of each character
    for (std::size_t i = 0; i < line.size(); ++i)
        if (!is_continuation(static_cast<unsigned char>(line[i]))) starts.push_back(i);
    const long n = static_cast<long>(starts.size());
    if (n <= kMax) return {std::string(line), column, n + 1};
    const long at = static_cast<long>(column) - 1;
    const long lo = std::clamp(at - kBefore, 0L, n - kWindow), hi = std::min(n, lo + kWindow);
    const auto byte = [&](long c) {
        return c < n ? starts[static_cast<std::size_t>(c)] : line.size();
    };
    ShownLine s;
    s.text = lo > 0 ? "..." : "";
    s.text += line.substr(byte(lo), byte(hi) - byte(lo));
    const long offset = lo > 0 ? 3 - lo : 0; // columns of the shown text minus the line's
    s.column = at + 1 + offset;
    s.last_column = hi + offset;
    if (hi < n) s.text += "...";
    return s;
}

/// `text` with its control bytes (tab kept) as the Unicode control pictures, U+2400 + byte and
/// U+2421 for DEL: raw, a NUL or an escape would reach the terminal. One code point each, so
/// the caret's columns stay the line's.
std::string visible_controls(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if ((c >= 0x20 && c != 0x7f) || c == '\t') {
            out += ch;
            continue;
        }
        const unsigned picture = c == 0x7f ? 0x2421u : 0x2400u + c;
        out += static_cast<char>(0xE0 | (picture >> 12));
        out += static_cast<char>(0x80 | ((picture >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (picture & 0x3F));
    }
    return out;
}

} // namespace

std::string format_diagnostic(const SourceFile& file, const Diagnostic& d, bool color) {
    const char* bold = color ? "\033[1m" : "";
    const char* reset = color ? "\033[0m" : "";
    const char* sev_color = "";
    if (color) {
        sev_color = d.severity == Severity::Error     ? "\033[1;31m"
                    : d.severity == Severity::Warning ? "\033[1;35m"
                                                      : "\033[1;36m";
    }
    std::string out;
    out += bold;
    out += file.name();
    if (d.range.line > 0) {
        out += ':' + std::to_string(d.range.line) + ':' + std::to_string(d.range.column);
    }
    out += ": ";
    out += reset;
    out += sev_color;
    out += severity_name(d.severity);
    out += ":";
    out += reset;
    out += ' ';
    out += bold;
    out += d.message;
    out += reset;
    if (!d.code.empty()) out += " [" + d.code + "]";
    out += '\n';
    if (d.range.line > 0) {
        const auto line = file.line_text(d.range.line);
        // Signed: a range may start past the end of its line (a continued statement).
        long width = 1;
        if (d.range.end_line == d.range.line && d.range.end_column > d.range.column)
            width = static_cast<long>(d.range.end_column) - d.range.column;
        else if (d.range.end_line > d.range.line)
            width = static_cast<long>(utf8_length(line)) + 1 - static_cast<long>(d.range.column);
        width = std::max(1L, width);
        // A long line is shown as a window of it around the column, its cut ends marked "...".
        const ShownLine shown = shown_line(line, d.range.column);
        const std::string text = visible_controls(shown.text);
        width = std::min(width, std::max(1L, shown.last_column + 1 - shown.column));
        // Tabs keep their width in the caret line so the caret stays under the column.
        std::string caret;
        long col = 1;
        for (std::size_t i = 0; i < text.size() && col < shown.column; ++i) {
            if (is_continuation(static_cast<unsigned char>(text[i]))) continue;
            caret += text[i] == '\t' ? '\t' : ' ';
            ++col;
        }
        out += "    ";
        out += text;
        out += "\n    ";
        out += caret;
        out += color ? "\033[1;32m" : "";
        out += '^';
        if (width > 1) out += std::string(static_cast<std::size_t>(width - 1), '~');
        out += reset;
        out += '\n';
    }
    if (!d.fix.empty()) out += "    fix: " + d.fix + '\n';
    return out;
}

} // namespace shardscope
