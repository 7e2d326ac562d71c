// What the REPL's files share (repl_session.cpp, repl_commands.cpp, repl_display.cpp): the
// session's name, the small text helpers and the walk over a plan's layouts. Internal to app/.
#pragma once

#include "parser/source.hpp"
#include "semantics/plan.hpp"

#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

namespace shardscope::app::repl {

/// The name diagnostics and plans give the session (the file `:save` writes has the same
/// lines).
inline constexpr const char* kName = "repl";

inline std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    const auto e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

inline std::vector<std::string> words(const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> out;
    for (std::string w; in >> w;)
        out.push_back(w);
    return out;
}

inline std::string first_line(const std::string& s) {
    const auto t = trim(s);
    const auto nl = t.find('\n');
    return nl == std::string::npos ? t : t.substr(0, nl) + " ...";
}

/// A diagnostic's identity, to tell the new ones of a candidate text from those the session
/// already had (earlier entries keep their offsets when text is appended).
inline std::string key(const Diagnostic& d) {
    return d.code + ":" + std::to_string(d.range.offset) + ":" + d.message;
}

/// Every layout of the plan, in plan order (operands, then results, then the data flow's).
template <class F>
void for_each_layout(const semantics::Plan& plan, F&& f) {
    for (const auto& s : plan.statements) {
        for (const auto& o : s.operands)
            f(o, s, false);
        f(s.result, s, true);
    }
}

inline std::string plural(std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

} // namespace shardscope::app::repl
