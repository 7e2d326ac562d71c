// Exporters: a checked program as a PyTorch DTensor script, a JAX script, or LaTeX. They read
// the Plan (placements, collectives, the data flow of every statement) and never recompute a
// placement. No GL: the `codegen` library.
#pragma once

#include "parser/ast.hpp"
#include "semantics/plan.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace shardscope::codegen {

enum class ExportTarget { Torch, Jax, Latex };

/// "torch", "jax" or "latex".
std::optional<ExportTarget> parse_export_target(std::string_view name);

struct ExportOptions {
    std::string source;  ///< the file it came from (header comment)
    std::string command; ///< the command that made it (header comment)
};

/// Thrown when the plan does not describe the program (not every statement planned), or a
/// statement has no form in the target; `range` is then that statement's (line 0: none), so
/// the caller can report it at its place like any diagnostic.
struct ExportError : std::runtime_error {
    using std::runtime_error::runtime_error;
    ExportError(const std::string& message, const ast::SourceRange& at)
        : std::runtime_error(message), range(at) {}
    ast::SourceRange range;
};

/// `plan` must be check(program) without errors.
std::string export_program(const ast::Program& program, const semantics::Plan& plan,
                           ExportTarget target, const ExportOptions& options = {});

/// torchrun --nproc-per-node N script.py: DeviceMesh, distribute_tensor with the plan's
/// placements, torch.einsum and the other ops on DTensors, redistribute to every layout the
/// plan gives a value (its collectives).
std::string export_torch(const ast::Program& program, const semantics::Plan& plan,
                         const ExportOptions& options = {});
/// XLA_FLAGS=--xla_force_host_platform_device_count=N python3 script.py: a Mesh, a
/// NamedSharding per tensor, one jax.jit per statement with in/out shardings and a sharding
/// constraint on every value the plan lays out. Prints each result (as `exec` computes it,
/// with the same --data/--seed inputs).
std::string export_jax(const ast::Program& program, const semantics::Plan& plan,
                       const ExportOptions& options = {});
/// The declarations as notation lines, then an align environment: every tensor written with
/// its plan placement, a caption with the DTensor placements, and the collectives as
/// \textrm{(...)}. Parses back to the same plans.
std::string export_latex(const ast::Program& program, const semantics::Plan& plan,
                         const ExportOptions& options = {});

} // namespace shardscope::codegen
