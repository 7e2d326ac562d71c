#include "splitter.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace shardscope::parser {

static bool is_alpha(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) != 0;
}

static std::string trim(std::string_view s) {
    std::size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
        ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
        --e;
    return std::string(s.substr(b, e - b));
}

namespace {

/// The bytes the splitter stops at; every other byte is skipped in a tight loop. Braces are
/// not among them: they matter only at a `;` or a caption, and are counted there (a statement
/// has a dozen, and a stop cost as much as the bytes between two of them).
struct Special {
    bool at[256] = {};
    constexpr Special() {
        for (unsigned char c : {'\n', ';', '#', '%', '\\'})
            at[c] = true;
    }
};
constexpr Special kSpecial;

/// The first byte at or after `p` that kSpecial holds, or `end`: four bytes a round, one
/// bounds test for the four.
const char* next_special(const char* p, const char* end) {
    auto special = [](char c) { return kSpecial.at[static_cast<unsigned char>(c)]; };
    for (; end - p >= 4; p += 4) {
        if (special(p[0])) return p;
        if (special(p[1])) return p + 1;
        if (special(p[2])) return p + 2;
        if (special(p[3])) return p + 3;
    }
    while (p != end && !special(*p))
        ++p;
    return p;
}

} // namespace

std::vector<Piece> split_statements(std::string_view s) {
    std::vector<Piece> out;
    // A statement and a line end per line, typically: one allocation instead of a doubling
    // series of moves.
    std::size_t lines = 0; // memchr, not std::count: a byte-at-a-time loop cost 7 per byte
    const char* const end = s.data() + s.size();
    for (const char* p = s.data(); p != end; ++p) {
        p = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
        if (!p) break;
        ++lines;
    }
    out.reserve(2 * lines + 2);
    std::size_t start = 0; // start of the current statement
    // Brace depth: separators inside braces belong to the statement. `depth` counts the braces
    // before `counted`; those from there on are counted when a `;` or a caption asks.
    int depth = 0;
    std::size_t counted = 0;
    auto depth_at = [&](std::size_t at) {
        for (; counted < at; ++counted) {
            if (s[counted] == '{') ++depth;
            if (s[counted] == '}' && depth > 0) --depth;
        }
        return depth;
    };
    auto end_statement = [&](std::size_t at) {
        if (at > start) out.push_back({Piece::Kind::Statement, start, at, {}});
    };
    std::size_t i = 0;
    while (i < s.size()) {
        i = static_cast<std::size_t>(next_special(s.data() + i, end) - s.data());
        if (i == s.size()) break;
        const char c = s[i];
        if (c == '\n') {
            end_statement(i);
            out.push_back({Piece::Kind::LineEnd, i, i + 1, {}});
            start = counted = ++i;
            depth = 0;
        } else if (c == ';') {
            if (depth_at(i) == 0) {
                end_statement(i);
                start = i + 1;
            }
            counted = ++i;
        } else if (c == '#' || c == '%') {
            end_statement(i);
            std::size_t e = i;
            while (e < s.size() && s[e] != '\n')
                ++e;
            out.push_back({Piece::Kind::Comment, i, e, trim(s.substr(i + 1, e - i - 1))});
            start = counted = i = e;
        } else { // '\\'
            depth_at(i);
            const char n = i + 1 < s.size() ? s[i + 1] : '\0';
            if (n == '\\') { // LaTeX line break: a statement separator
                end_statement(i);
                start = i += 2;
            } else if (n == '\n' || (n == '\r' && i + 2 < s.size() && s[i + 2] == '\n')) {
                i += n == '\n' ? 2 : 3; // continuation: the statement goes on
            } else if (is_alpha(n)) {
                std::size_t e = i + 1;
                while (e < s.size() && is_alpha(s[e]))
                    ++e;
                const auto cmd = s.substr(i + 1, e - i - 1);
                std::size_t b = e;
                while (b < s.size() && (s[b] == ' ' || s[b] == '\t'))
                    ++b;
                if ((cmd == "textrm" || cmd == "text") && depth == 0 && b < s.size() &&
                    s[b] == '{') {
                    // Find the matching brace on this line.
                    std::size_t k = b + 1;
                    int d = 1;
                    while (k < s.size() && s[k] != '\n' && d > 0) {
                        if (s[k] == '{') ++d;
                        if (s[k] == '}') --d;
                        ++k;
                    }
                    const auto content = trim(s.substr(b + 1, k - b - 2 + (d > 0 ? 1 : 0)));
                    if (d == 0 && !content.empty() && content.front() != '(') {
                        end_statement(i);
                        out.push_back({Piece::Kind::Comment, i, k, content});
                        start = counted = i = k;
                        continue;
                    }
                }
                i = e;
            } else {
                i += n == '\0' ? 1 : 2; // an escape such as `\,` `\ ` `\%` `\{`
            }
            counted = i; // what the backslash took is not a brace of the statement
        }
    }
    end_statement(s.size());
    return out;
}

} // namespace shardscope::parser
