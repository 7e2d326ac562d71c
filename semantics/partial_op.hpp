// How partial copies combine: the one reduction operator of placements, the checker's values
// and the executor's collectives and kernels. Its own header so that exec's low-level code
// (communicators, kernels) names it without the whole Plan.
#pragma once

namespace shardscope::semantics {

/// How a partial value's pending copies combine (DTensor's Partial reduce_op); what an
/// all-reduce, a reduce-scatter or a reducing kernel computes.
enum class PartialOp { Sum, Max };

} // namespace shardscope::semantics
