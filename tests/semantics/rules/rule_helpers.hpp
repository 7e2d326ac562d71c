// What the mirrored rule tests (tests/semantics/rules/test_<family>.cpp) share besides
// ../helpers.hpp: counting diagnostics and steps of a checked plan.
#pragma once

#include "../helpers.hpp"

#include <algorithm>
#include <string>

namespace shardscope::test {

inline int count_code(const semantics::Plan& p, const std::string& code) {
    return static_cast<int>(std::count_if(p.diagnostics.begin(), p.diagnostics.end(),
                                          [&](const auto& d) { return d.code == code; }));
}

inline bool has_code(const semantics::Plan& p, const std::string& code, Severity severity) {
    return std::any_of(p.diagnostics.begin(), p.diagnostics.end(),
                       [&](const auto& d) { return d.code == code && d.severity == severity; });
}

inline int count_steps(const semantics::StatementPlan& s, semantics::StepKind kind,
                       const std::string& tensor = {}) {
    return static_cast<int>(std::count_if(s.steps.begin(), s.steps.end(), [&](const auto& st) {
        return st.kind == kind && (tensor.empty() || st.tensor == tensor);
    }));
}

/// The reduce op of every all-reduce of a statement, in order ("max max").
inline std::string all_reduce_ops(const semantics::StatementPlan& s) {
    std::string out;
    for (const auto& st : s.steps)
        if (st.kind == semantics::StepKind::AllReduce)
            out +=
                (out.empty() ? "" : " ") + st.text.reason.substr(st.text.reason.find('(') + 1, 3);
    return out;
}

} // namespace shardscope::test
