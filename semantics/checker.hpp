// The checker: from a parsed program to its Plan (NOTATION.md sections 5-8).
#pragma once

#include "plan.hpp"

#include "parser/ast.hpp"
#include "parser/source.hpp"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::semantics {

struct CheckOptions {
    bool strict = false; ///< implicit redistributions and chosen fixes are errors
    /// `--mesh` override of the file's mesh (frontend/mesh_spec.hpp reads "2x4", "dp=2,tp=4")
    std::optional<Mesh> mesh;
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

/// The plans of statements from earlier checks, for re-checking on every keystroke (REPL,
/// GUI). A statement's plan is reused when its text, the program-wide facts (mesh, ranges,
/// splits, types, hardware, options) and the placements of the tensors it reads are all
/// unchanged; its diagnostics move with it. The result equals an uncached check.
class CheckCache {
public:
    CheckCache();
    ~CheckCache();
    CheckCache(CheckCache&&) noexcept;
    CheckCache& operator=(CheckCache&&) noexcept;
    std::size_t size() const; ///< statements held (those of the last check)
    std::size_t hits() const; ///< statements reused by the last check
    void clear();
    struct Impl;

private:
    friend Plan check(const ast::Program&, const CheckOptions&, CheckCache&);
    std::unique_ptr<Impl> impl_;
};

/// `check` with a cache carried from one call to the next.
Plan check(const ast::Program& program, const CheckOptions& options, CheckCache& cache);

/// Whether two occurrences of a tensor have one layout: the same mesh axes on each atom (by
/// position) and the same partial placements.
bool same_layout(const TensorLayout& a, const TensorLayout& b);

/// The mesh a `mesh` line declares.
Mesh mesh_of(const ast::MeshDecl& m);

} // namespace shardscope::semantics
