// The order in which a product of several operands is contracted, pairwise, and what that
// costs: NOTATION.md section 8 (cost model: compute is 2 FLOPs per multiply-add over the
// local extents). A pure function of plain inputs, so that it can be tested by hand.
#pragma once

#include "semantics/flat.hpp"

#include <cstddef>
#include <utility>
#include <vector>

namespace shardscope::semantics {

/// One greedy contraction order.
struct ContractionOrder {
    /// The pairs contracted, first to last. Each is (a, b), a < b, positions in the list of
    /// operands as it stands at that step: the contracted pair's result takes a's place and
    /// b is removed (numpy's einsum_path convention). A product of n operands has n - 1 pairs.
    std::vector<std::pair<std::size_t, std::size_t>> pairs;
    /// The sum of the pairs' costs: 2 × the product of the extents of the pair's indices.
    double flops = 0;
};

/// Greedily the cheapest pair first. `operands`: each operand's indices; `extent`: every
/// index's (local) extent; `output`: the indices needed after the product. A pair costs 2 × the
/// product of the extents of the union of its indices; the cheapest pair is contracted first,
/// the earliest pair (by a, then b) among equal costs. Its result keeps the indices that the
/// output or another remaining operand needs. The last pair is not reduced further (its
/// indices are the caller's). Fewer than two operands: no pairs, no FLOPs.
ContractionOrder contraction_order(std::vector<FlatSet<IndexId>> operands,
                                   const FlatMap<IndexId, double>& extent,
                                   const FlatSet<IndexId>& output);
/// The same greedy order over the index sets themselves, every pair's cost rescanned at each
/// step (cubic in the operands): what contraction_order does past 64 distinct indices, and
/// the reference its faster path is tested against.
ContractionOrder contraction_order_by_sets(std::vector<FlatSet<IndexId>> operands,
                                           const FlatMap<IndexId, double>& extent,
                                           const FlatSet<IndexId>& output);

} // namespace shardscope::semantics
