// The single-device reference: evaluates a program's equations and chains on logical
// (unsharded) tensors in f64, straight from the AST with the notation's einsum meaning. It
// shares nothing with the plan but the index ranges and the inputs, so a wrong placement,
// collective or local operation in the plan shows up as a difference.
#pragma once

#include "exec/data.hpp"
#include "exec/layout.hpp"
#include "exec/tensor.hpp"
#include "parser/ast.hpp"
#include "semantics/plan.hpp"

#include <map>
#include <string>
#include <vector>

namespace shardscope::exec {

/// Every equation's and chain's stored value, in program order (one per plan statement),
/// labelled as the plan's result layout. A statement in a repeat: its last run's value.
std::vector<Tensor<double>> evaluate_reference(const ast::Program& program,
                                               const semantics::Plan& plan, LabelTable& labels,
                                               const DataOptions& data);

/// The stored value of every run of schedule(plan) (interpreter.hpp), in its order.
std::vector<Tensor<double>> evaluate_runs(const ast::Program& program, const semantics::Plan& plan,
                                          LabelTable& labels, const DataOptions& data);

} // namespace shardscope::exec
