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

/// Plans equation or chain `s` given the tensors defined before it (nullopt when it cannot be
/// planned; the reasons are in the diagnostics). `source` and `pretty` are its text.
std::optional<Planned> plan_statement(Context& ctx, const Defined& defined, const ast::Statement& s,
                                      std::string source, std::string pretty,
                                      const CheckOptions& options,
                                      std::vector<Diagnostic>& diagnostics);

} // namespace shardscope::semantics::detail
