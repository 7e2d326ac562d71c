// The checker: from a parsed program to its Plan (NOTATION.md sections 5-8).
#pragma once

#include "plan.hpp"

#include "parser/ast.hpp"
#include "parser/source.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace shardscope::semantics {

struct CheckOptions {
    bool strict = false;             ///< implicit redistributions and chosen fixes are errors
    std::optional<std::string> mesh; ///< `--mesh` override: "4", "2x4", "dp=2,tp=4"
    /// The program's text, so that StatementPlan::source is the statement as written (when
    /// empty, it is the canonical form).
    std::string_view text;
    /// Undeclared ranges default to small values that every sharding divides (for running a
    /// plan), instead of the cost model's 1024.
    bool small_defaults = false;
    /// Ignore `dim` declarations (with small_defaults: run a program at small sizes).
    bool ignore_dims = false;
};

/// Checks a whole program. Diagnostics (with stable codes S...) go into Plan::diagnostics;
/// statements that cannot be planned are left out of Plan::statements.
Plan check(const ast::Program& program, const CheckOptions& options = {});

/// Parses a `--mesh` spec ("4", "2x4", "dp=2,tp=4" or "dp=2 tp=4"); nullopt if malformed.
std::optional<Mesh> parse_mesh_spec(const std::string& spec);

} // namespace shardscope::semantics
