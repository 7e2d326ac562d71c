// Helpers for the checker tests: check a program text and look at its plan.
#pragma once

#include "frontend/document.hpp"
#include "parser/parser.hpp"
#include "semantics/checker.hpp"
#include "semantics/report.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardscope::test {

/// Parses `text` (REQUIREs that it parses, printing the errors otherwise).
inline ast::Program parse_program(const std::string& text) {
    SourceFile file("test.ein", text);
    auto parsed = parser::parse(file);
    std::string errors;
    for (const auto& d : parsed.diagnostics)
        errors += format_diagnostic(file, d);
    REQUIRE_MESSAGE(!parsed.has_errors(), errors);
    return std::move(parsed.program);
}

/// Parses and checks `text` through the front door, as `shardscope check` does (REQUIREs that
/// it parses, printing the errors otherwise).
inline semantics::Plan check_text(const std::string& text, semantics::CheckOptions options = {}) {
    auto checked = frontend::check_text("test.ein", text, std::move(options));
    std::string errors;
    for (const auto& d : checked.parsed.diagnostics)
        errors += format_diagnostic(*checked.source, d);
    REQUIRE_MESSAGE(checked.syntax_ok(), errors);
    return std::move(checked.plan);
}

/// The plan and diagnostics as text, for failure messages.
inline std::string plan_text(const std::string& text, const semantics::Plan& plan) {
    SourceFile file("test.ein", text);
    std::string out = semantics::format_plan(plan, "test.ein");
    for (const auto& d : plan.diagnostics)
        out += format_diagnostic(file, d);
    return out;
}

/// Placement strings of a layout: {"R", "S(0)"}.
inline std::vector<std::string> placements(const semantics::TensorLayout& t) {
    std::vector<std::string> out;
    for (const auto& p : t.placements)
        out.push_back(p.text());
    return out;
}

/// Diagnostic codes of a plan, in order.
inline std::vector<std::string> codes(const semantics::Plan& plan) {
    std::vector<std::string> out;
    for (const auto& d : plan.diagnostics)
        out.push_back(d.code);
    return out;
}

/// Relative comparison (doctest::Approx's default scale of 1 would make any value below
/// about 1e-5, such as a time in seconds, compare equal to anything nearby).
inline doctest::Approx rel(double v) {
    return doctest::Approx(v).epsilon(1e-6).scale(0);
}

/// A checked program: its text and its plan, printable together.
struct Checked {
    std::string src;
    semantics::Plan plan;
    std::string text() const { return "program:\n" + src + "\nplan:\n" + plan_text(src, plan); }
};

inline Checked run(const std::string& src, semantics::CheckOptions options = {}) {
    return {src, check_text(src, options)};
}

inline std::string join(std::span<const std::string> v) {
    if (v.empty()) return "none";
    std::string out;
    for (const auto& x : v)
        out += (out.empty() ? "" : ", ") + x;
    return out;
}

/// "S(0), R"
inline std::string pl(const semantics::TensorLayout& t) {
    return join(placements(t));
}

/// The collectives of a statement of `c`'s plan, in plan order (semantics::collectives_of).
inline std::vector<std::string> collectives_in(const Checked& c,
                                               const semantics::StatementPlan& s) {
    return semantics::collectives_of(c.plan.mesh, s);
}

/// The collectives of a statement of `c`'s plan, "all-reduce(0), all-gather(1)" or "none".
inline std::string cols(const Checked& c, const semantics::StatementPlan& s) {
    return join(collectives_in(c, s));
}

/// The plan of the last statement whose result is `tensor` (REQUIREs that there is one). A
/// string_view, so that stmt(c, "z") makes no temporary the returned reference could seem to
/// depend on (GCC 13's -Wdangling-reference).
inline const semantics::StatementPlan& stmt(const Checked& c, std::string_view tensor) {
    const semantics::StatementPlan* found = nullptr;
    for (const auto& s : c.plan.statements)
        if (s.result.tensor == tensor) found = &s;
    REQUIRE_MESSAGE(found != nullptr,
                    (std::string("no statement defines ") + std::string(tensor) + "\n" + c.text()));
    return *found;
}

/// The layout of operand `tensor` of a statement (fails the check when there is none).
inline const semantics::TensorLayout& operand(const Checked& c, const semantics::StatementPlan& s,
                                              const std::string& tensor) {
    for (const auto& o : s.operands)
        if (o.tensor == tensor) return o;
    FAIL_CHECK("no operand " << tensor << "\n" << c.text());
    static semantics::TensorLayout none;
    return none;
}

/// "4x1024", or "scalar".
inline std::string shape(std::span<const std::int64_t> v) {
    std::string out;
    for (auto n : v)
        out += (out.empty() ? "" : "x") + std::to_string(n);
    return out.empty() ? "scalar" : out;
}

} // namespace shardscope::test
