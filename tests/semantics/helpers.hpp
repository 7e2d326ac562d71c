// Helpers for the checker tests: check a program text and look at its plan.
#pragma once

#include "parser/parser.hpp"
#include "semantics/checker.hpp"
#include "semantics/report.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace shardscope::test {

/// Parses and checks `text` (REQUIREs that it parses).
inline semantics::Plan check_text(const std::string& text, semantics::CheckOptions options = {}) {
    SourceFile file("test.ein", text);
    auto parsed = parser::parse(file);
    std::string errors;
    for (const auto& d : parsed.diagnostics) errors += format_diagnostic(file, d);
    REQUIRE_MESSAGE(!parsed.has_errors(), errors);
    return semantics::check(parsed.program, options);
}

/// The plan and diagnostics as text, for failure messages.
inline std::string plan_text(const std::string& text, const semantics::Plan& plan) {
    SourceFile file("test.ein", text);
    std::string out = semantics::format_plan(plan, "test.ein");
    for (const auto& d : plan.diagnostics) out += format_diagnostic(file, d);
    return out;
}

/// Placement strings of a layout: {"R", "S(0)"}.
inline std::vector<std::string> placements(const semantics::TensorLayout& t) {
    std::vector<std::string> out;
    for (const auto& p : t.placements) out.push_back(p.text());
    return out;
}

/// Diagnostic codes of a plan, in order.
inline std::vector<std::string> codes(const semantics::Plan& plan) {
    std::vector<std::string> out;
    for (const auto& d : plan.diagnostics) out.push_back(d.code);
    return out;
}

} // namespace shardscope::test
