#include "app/documents.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <optional>

namespace shardscope::app {

namespace {

bool ends_with(const std::string& s, const char* suffix) {
    const std::size_t n = std::strlen(suffix);
    if (s.size() < n) return false;
    for (std::size_t i = 0; i < n; ++i)
        if (std::tolower(static_cast<unsigned char>(s[s.size() - n + i])) != suffix[i])
            return false;
    return true;
}

bool starts_at(const std::string& text, std::size_t i, const char* what) {
    const std::size_t n = std::strlen(what);
    return i + n <= text.size() && text.compare(i, n, what) == 0;
}

/// The end of the indentation of the line at `k` (ending at `to`): at most `max` spaces, after
/// a byte order mark, which Markdown readers drop (counting it would indent a rewritten
/// block by one); `columns` gets the spaces' count.
std::size_t skip_indent(const std::string& text, std::size_t k, std::size_t to, std::uint32_t max,
                        std::uint32_t& columns) {
    columns = 0;
    if (starts_at(text, k, "\xEF\xBB\xBF") && k + 3 <= to) k += 3;
    while (k < to && text[k] == ' ' && columns < max) {
        ++k;
        ++columns;
    }
    return k;
}

/// The math environments read as notation, and what the parser is given for their
/// delimiters: \begin{align} and \end{align} are the parser's own; the others become those
/// (padded with spaces to the same width), $$ becomes spaces.
struct Environment {
    const char* name;
};
constexpr Environment kEnvironments[] = {{"align"}, {"align*"}, {"equation"}, {"equation*"}};

class Extractor {
public:
    Extractor(const std::string& text, bool markdown) : in_(text), markdown_(markdown) {
        out_.text.reserve(text.size());
    }

    ExtractedNotation run() {
        std::size_t i = 0;
        while (i < in_.size()) {
            const std::size_t line_end = std::min(in_.find('\n', i), in_.size());
            if (markdown_ && fence_state_ == Fence::None && math_ == Math::None) {
                if (auto fence = fence_open(i, line_end)) {
                    blank(i, line_end);
                    fence_state_ = fence->ein ? Fence::Ein : Fence::Other;
                    fence_char_ = fence->ch;
                    fence_len_ = fence->len;
                    if (fence->ein)
                        out_.fences.push_back(
                            {line_end + 1, line_end + 1, line_ + 1, fence->indent});
                    i = next_line(line_end);
                    continue;
                }
            } else if (markdown_ && fence_state_ != Fence::None) {
                if (fence_close(i, line_end)) {
                    if (fence_state_ == Fence::Ein) out_.fences.back().end = i;
                    blank(i, line_end);
                    fence_state_ = Fence::None;
                } else if (fence_state_ == Fence::Ein) {
                    keep(i, line_end);
                    note_mesh(i, line_end);
                } else {
                    blank(i, line_end);
                }
                i = next_line(line_end);
                continue;
            }
            scan_math(i, line_end);
            i = next_line(line_end);
        }
        // An unclosed ```ein block runs to the end of the document.
        if (fence_state_ == Fence::Ein && !out_.fences.empty()) {
            auto& last = out_.fences.back();
            last.begin = std::min(last.begin, in_.size());
            last.end = in_.size();
        }
        return std::move(out_);
    }

private:
    enum class Fence { None, Ein, Other };
    enum class Math { None, Env, Dollars };
    struct Open {
        char ch;
        std::size_t len;
        bool ein;
        std::uint32_t indent;
    };

    std::size_t next_line(std::size_t line_end) {
        if (line_end < in_.size()) {
            out_.text += '\n';
            ++line_;
        }
        return line_end + 1;
    }

    void keep(std::size_t from, std::size_t to) { out_.text.append(in_, from, to - from); }
    void blank(std::size_t from, std::size_t to) {
        for (std::size_t k = from; k < to; ++k) {
            const auto c = static_cast<unsigned char>(in_[k]);
            if ((c & 0xC0) == 0x80) continue; // one space per code point
            out_.text += c == '\t' ? '\t' : ' ';
        }
    }

    /// A math environment opening at `k` of the line starting at `line_start`.
    void note_math(std::size_t line_start, std::size_t k, std::string opening) {
        std::uint32_t column = 1;
        for (std::size_t j = line_start; j < k; ++j)
            column += (static_cast<unsigned char>(in_[j]) & 0xC0) != 0x80;
        out_.math.push_back({line_, column, std::move(opening)});
    }

    void note_mesh(std::size_t from, std::size_t to) {
        while (from < to && (in_[from] == ' ' || in_[from] == '\t'))
            ++from;
        if (starts_at(in_, from, "mesh") && from + 4 < to &&
            (in_[from + 4] == ' ' || in_[from + 4] == '\t'))
            out_.declares_mesh = true;
    }

    /// CommonMark 0.30 section 4.5: a fence opens after at most 3 spaces; a 4th makes the
    /// line an indented code block (or a paragraph's continuation), never notation.
    std::optional<Open> fence_open(std::size_t from, std::size_t to) const {
        std::uint32_t indent = 0;
        std::size_t k = skip_indent(in_, from, to, 3, indent);
        if (k >= to || (in_[k] != '`' && in_[k] != '~')) return std::nullopt;
        const char ch = in_[k];
        std::size_t n = 0;
        while (k < to && in_[k] == ch) {
            ++k;
            ++n;
        }
        if (n < 3) return std::nullopt;
        while (k < to && (in_[k] == ' ' || in_[k] == '\t'))
            ++k;
        std::size_t w = k;
        while (w < to && !std::isspace(static_cast<unsigned char>(in_[w])) && in_[w] != '{')
            ++w;
        const std::string info = in_.substr(k, w - k);
        return Open{ch, n, info == "ein" || info == "{ein}" || info == ".ein", indent};
    }

    /// A closing fence is indented at most 3 spaces too, whatever the opening's indent.
    bool fence_close(std::size_t from, std::size_t to) const {
        std::uint32_t indent = 0;
        std::size_t k = skip_indent(in_, from, to, 3, indent);
        std::size_t n = 0;
        while (k < to && in_[k] == fence_char_) {
            ++k;
            ++n;
        }
        if (n < fence_len_) return false;
        while (k < to && (in_[k] == ' ' || in_[k] == '\t' || in_[k] == '\r'))
            ++k;
        return k == to;
    }

    /// Outside fences: keeps what lies inside math environments, blanks the rest.
    void scan_math(std::size_t from, std::size_t to) {
        std::size_t k = from;
        std::size_t kept_from = math_ != Math::None ? from : std::string::npos;
        while (k < to) {
            if (math_ == Math::None) {
                if (in_[k] == '\\' && k + 1 < to && (in_[k + 1] == '$' || in_[k + 1] == '`')) {
                    blank(k, k + 2);
                    k += 2;
                } else if (const std::size_t n = markdown_ ? code_span_length(k, to) : 0) {
                    blank(k, k + n); // `$$` in inline code is prose, not a display
                    k += n;
                } else if (in_[k] == '%' && !markdown_) {
                    blank(k, to); // a LaTeX comment
                    k = to;
                } else if (starts_at(in_, k, "$$")) {
                    note_math(from, k, "$$");
                    blank(k, k + 2);
                    k += 2;
                    math_ = Math::Dollars;
                    ++out_.math_regions;
                    kept_from = k;
                } else if (const std::size_t n = begin_env(k)) {
                    note_math(from, k, "\\begin{" + env_ + "}");
                    k += n;
                    math_ = Math::Env;
                    ++out_.math_regions;
                    kept_from = k;
                } else {
                    blank(k, k + 1);
                    ++k;
                }
                continue;
            }
            // Inside: look for the end.
            if (math_ == Math::Dollars && starts_at(in_, k, "$$")) {
                keep(kept_from, k);
                note_mesh(kept_from, k);
                blank(k, k + 2);
                k += 2;
                math_ = Math::None;
                kept_from = std::string::npos;
            } else if (const std::size_t n = math_ == Math::Env ? end_env_length(k) : 0) {
                keep(kept_from, k);
                note_mesh(kept_from, k);
                out_.text += "\\end{align}";
                out_.text.append(n - 11, ' ');
                k += n;
                math_ = Math::None;
                kept_from = std::string::npos;
            } else {
                ++k;
            }
        }
        if (kept_from != std::string::npos) {
            keep(kept_from, to);
            note_mesh(kept_from, to);
        }
    }

    /// At `k`, a Markdown code span: a run of N backticks up to the next run of exactly N
    /// (CommonMark). Only spans closed on the same line are seen (a span over a line break
    /// is rare in prose); an unclosed run is literal backticks. Returns the length of the
    /// span, or of the unclosed run (so that it is skipped whole), 0 if no backtick.
    std::size_t code_span_length(std::size_t k, std::size_t to) {
        if (in_[k] != '`') return 0;
        const auto run_end = [&](std::size_t j) {
            while (j < to && in_[j] == '`')
                ++j;
            return j;
        };
        const std::size_t open_end = run_end(k);
        const std::size_t n = open_end - k;
        // A run length found unclosed on this line stays so for every later run of that
        // length (its search covered theirs): without the memo, a line of many unclosed runs
        // was searched to its end once per run.
        if (unclosed_line_ != to) {
            unclosed_line_ = to;
            unclosed_.clear();
        }
        if (n < unclosed_.size() && unclosed_[n]) return n;
        for (std::size_t j = open_end; j < to;) {
            if (in_[j] != '`') {
                ++j;
                continue;
            }
            const std::size_t close_end = run_end(j);
            if (close_end - j == n) return close_end - k;
            j = close_end;
        }
        if (unclosed_.size() <= n) unclosed_.resize(n + 1);
        unclosed_[n] = true;
        return n;
    }

    /// At `k`, \begin{ENV} of a notation environment: writes the parser's \begin{align}
    /// (padded) and returns the length consumed; 0 if none.
    std::size_t begin_env(std::size_t k) {
        for (const auto& e : kEnvironments) {
            const std::string token = std::string("\\begin{") + e.name + "}";
            if (starts_at(in_, k, token.c_str())) {
                env_ = e.name;
                out_.text += "\\begin{align}";
                out_.text.append(token.size() - 13, ' ');
                return token.size();
            }
        }
        return 0;
    }
    /// At `k`, the \end{ENV} of the open environment: its length; 0 if none.
    std::size_t end_env_length(std::size_t k) const {
        const std::string token = "\\end{" + env_ + "}";
        return starts_at(in_, k, token.c_str()) ? token.size() : 0;
    }

    const std::string& in_;
    bool markdown_;
    std::size_t unclosed_line_ = std::string::npos; ///< the line end unclosed_ is for
    std::vector<bool> unclosed_; ///< backtick run lengths without a closing run on that line
    ExtractedNotation out_;
    Fence fence_state_ = Fence::None;
    char fence_char_ = '`';
    std::size_t fence_len_ = 3;
    Math math_ = Math::None;
    std::string env_;
    std::uint32_t line_ = 1;
};

} // namespace

bool is_document(const std::string& path) {
    return ends_with(path, ".md") || ends_with(path, ".markdown") || ends_with(path, ".tex");
}

bool read_as_document(const std::string& path, const std::string& text) {
    if (!is_document(path)) return false;
    if (!ends_with(path, ".tex")) return true;
    return text.find("\\documentclass") != std::string::npos ||
           text.find("\\begin{document}") != std::string::npos;
}

ExtractedNotation extract_notation(const std::string& path, const std::string& text) {
    return Extractor(text, !ends_with(path, ".tex")).run();
}

std::string fence_content(const std::string& document, const FencedBlock& fence) {
    std::string out;
    out.reserve(fence.end - fence.begin);
    for (std::size_t i = fence.begin; i < fence.end;) {
        const std::size_t line_end = std::min(document.find('\n', i), fence.end);
        std::uint32_t columns = 0;
        const std::size_t k = skip_indent(document, i, line_end, fence.indent, columns);
        out.append(document, k, line_end - k);
        if (line_end < fence.end) out += '\n';
        i = line_end + 1;
    }
    return out;
}

std::string indent_fence_content(const std::string& content, std::uint32_t indent) {
    std::string out;
    out.reserve(content.size() + content.size() / 8);
    for (std::size_t i = 0; i < content.size();) {
        const std::size_t line_end = std::min(content.find('\n', i), content.size());
        // A blank line stays empty: trailing spaces would be noise (CommonMark reads both).
        if (line_end > i && !(line_end == i + 1 && content[i] == '\r')) out.append(indent, ' ');
        out.append(content, i, line_end - i);
        if (line_end < content.size()) out += '\n';
        i = line_end + 1;
    }
    return out;
}

bool contains_notation(const ExtractedNotation& doc) {
    return !doc.fences.empty() || (doc.math_regions > 0 && doc.declares_mesh);
}

} // namespace shardscope::app
