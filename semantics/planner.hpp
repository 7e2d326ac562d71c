// The search over a statement's choice points: the implied or the cheapest legal plan, its
// alternatives and plan notes (NOTATION.md section 8). Internal to semantics/.
#pragma once

#include "context.hpp"

#include <map>
#include <optional>
#include <string>

namespace shardscope::semantics::detail {

/// A statement's plan and the value it stores.
struct Planned {
    StatementPlan plan;
    Value result;
    std::vector<Value> moved_also; ///< a chain of products' other moved factors, as they end
};

/// Where planning a statement writes: its plan in place (in the Plan's list: a plan's layouts
/// are inline, and each move of one copied them element by element), the value it stores and
/// a chain of products' other moved factors.
struct PlanOut {
    StatementPlan& plan; ///< a default one
    Value& result;
    std::vector<Value>& moved_also;
};

/// Plans equation or chain `s` given the tensors defined before it into `out` (false when it
/// cannot be planned; the reasons are in the diagnostics, `out` is then to be dropped).
/// `source` and `pretty` are its text.
bool plan_statement(Context& ctx, const Defined& defined, const ast::Statement& s,
                    std::string source, std::string pretty, const CheckOptions& options,
                    std::vector<Diagnostic>& diagnostics, const PlanOut& out);

} // namespace shardscope::semantics::detail
