// Contraction order: NOTATION.md section 8 prices a product's local compute at 2 FLOPs per
// multiply-add. A product of more than two operands is contracted pair by pair, and the
// order matters; the checker takes the greedy order, the cheapest pair first (numpy's
// einsum_path "greedy"), and prices the product as the sum of its pairs.
#include "contraction_order.hpp"

namespace shardscope::semantics {

ContractionOrder contraction_order(std::vector<FlatSet<IndexId>> live,
                                   const FlatMap<IndexId, double>& extent,
                                   const FlatSet<IndexId>& output) {
    ContractionOrder out;
    // Each pair's cost once (the merged operand's pairs are recomputed): a product of n
    // operands costs O(n^2) pair costs, not O(n^3).
    const std::size_t n = live.size();
    if (n < 2) return out;
    out.pairs.reserve(n - 1);
    // A product of more operands than any model writes (thousands, from a generator or a
    // fuzzer) is contracted left to right: the greedy search is cubic in time and its cost
    // table quadratic in memory (3200 operands took 11 s, 8000 did not finish).
    constexpr std::size_t kGreedyMax = 512;
    if (n > kGreedyMax) {
        FlatMap<IndexId, std::size_t> last; // the last operand each index appears in
        for (std::size_t o = 0; o < n; ++o)
            for (const auto& i : live[o])
                last[i] = o;
        FlatSet<IndexId> acc = live[0];
        for (std::size_t b = 1; b < n; ++b) {
            FlatSet<IndexId> u = acc;
            u.insert(live[b].begin(), live[b].end());
            double f = 2;
            for (const auto& i : u)
                f *= extent.at(i);
            out.flops += f;
            out.pairs.emplace_back(0, 1);
            if (b + 1 == n) break;
            // What the rest or the output still needs (counted from here on).
            acc = {};
            for (const auto& i : u)
                if (output.count(i) > 0 || last.at(i) > b) acc.insert(i);
        }
        return out;
    }
    auto pair_cost = [&](const FlatSet<IndexId>& x, const FlatSet<IndexId>& y) {
        FlatSet<IndexId> u = x;
        u.insert(y.begin(), y.end());
        double f = 2;
        for (const auto& i : u)
            f *= extent.at(i);
        return f;
    };
    // cost[slot[a] * n + slot[b]]: the pair (a, b) of live operands, by their first positions.
    std::vector<std::size_t> slot(n);
    std::vector<double> cost(n * n);
    for (std::size_t a = 0; a < n; ++a) {
        slot[a] = a;
        for (std::size_t b = a + 1; b < n; ++b)
            cost[a * n + b] = pair_cost(live[a], live[b]);
    }
    while (live.size() > 1) {
        double best = -1;
        std::size_t ba = 0, bb = 1;
        for (std::size_t a = 0; a < live.size(); ++a)
            for (std::size_t b = a + 1; b < live.size(); ++b) {
                const double f = cost[slot[a] * n + slot[b]];
                if (best < 0 || f < best) best = f, ba = a, bb = b;
            }
        out.flops += best;
        out.pairs.emplace_back(ba, bb);
        if (live.size() == 2) break; // the last pair: what it keeps is the result's
        FlatSet<IndexId> u = live[ba];
        u.insert(live[bb].begin(), live[bb].end());
        // Keep indices needed by the rest or outside.
        FlatSet<IndexId> keep;
        for (const auto& i : u) {
            bool needed = output.count(i) > 0;
            for (std::size_t o = 0; o < live.size(); ++o)
                if (o != ba && o != bb && live[o].count(i)) needed = true;
            if (needed) keep.insert(i);
        }
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(bb));
        live[ba] = keep;
        slot.erase(slot.begin() + static_cast<std::ptrdiff_t>(bb));
        for (std::size_t a = 0; a < live.size(); ++a)
            if (a < ba)
                cost[slot[a] * n + slot[ba]] = pair_cost(live[a], live[ba]);
            else if (a > ba)
                cost[slot[ba] * n + slot[a]] = pair_cost(live[ba], live[a]);
    }
    return out;
}

} // namespace shardscope::semantics
