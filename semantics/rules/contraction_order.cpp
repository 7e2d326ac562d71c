// Contraction order: NOTATION.md section 8 prices a product's local compute at 2 FLOPs per
// multiply-add. A product of more than two operands is contracted pair by pair, and the
// order matters; the checker takes the greedy order, the cheapest pair first (numpy's
// einsum_path "greedy"), and prices the product as the sum of its pairs.
#include "contraction_order.hpp"

#include <cstdint>
#include <optional>

namespace shardscope::semantics {

namespace {

/// The greedy order of contraction_order, for operands over at most 64 distinct indices: each
/// index a bit (in IndexId order, so that a pair's extents multiply in the same order as over
/// the sets, to the same double), each operand a mask, each position's cheapest partner kept
/// (a row minimum) so that a step scans the rows, not every pair. The same pairs and FLOPs;
/// nullopt past 64 indices.
std::optional<ContractionOrder> greedy_in_bits(const std::vector<FlatSet<IndexId>>& operands,
                                               const FlatMap<IndexId, double>& extent,
                                               const FlatSet<IndexId>& output) {
    FlatMap<IndexId, int> bit;
    for (const auto& o : operands)
        for (const auto& i : o)
            bit[i] = 0;
    if (bit.size() > 64) return std::nullopt;
    std::vector<double> ext;
    std::uint64_t out_mask = 0;
    for (auto& [i, b] : bit) {
        b = static_cast<int>(ext.size());
        ext.push_back(extent.at(i));
        if (output.count(i)) out_mask |= std::uint64_t{1} << b;
    }
    const std::size_t n = operands.size();
    std::vector<std::uint64_t> mask(n); // by slot (first position); merged into the lower
    std::vector<int> count(ext.size()); // live operands holding each index
    for (std::size_t o = 0; o < n; ++o)
        for (const auto& i : operands[o]) {
            mask[o] |= std::uint64_t{1} << bit.at(i);
            ++count[static_cast<std::size_t>(bit.at(i))];
        }
    auto pair_cost = [&](std::size_t a, std::size_t b) {
        double f = 2;
        for (std::uint64_t u = mask[a] | mask[b]; u; u &= u - 1)
            f *= ext[static_cast<std::size_t>(__builtin_ctzll(u))];
        return f;
    };
    std::vector<std::size_t> alive(n); // live slots, in position order
    for (std::size_t o = 0; o < n; ++o)
        alive[o] = o;
    struct Row {
        double cost = 0;
        std::size_t with = 0; ///< slot of the cheapest later partner (the earliest among ties)
    };
    std::vector<Row> row(n);
    auto fill_row = [&](std::size_t pos) { // the row of alive[pos], over the later positions
        const std::size_t a = alive[pos];
        row[a] = {-1, 0};
        for (std::size_t q = pos + 1; q < alive.size(); ++q) {
            const double f = pair_cost(a, alive[q]);
            if (row[a].cost < 0 || f < row[a].cost) row[a] = {f, alive[q]};
        }
    };
    for (std::size_t pos = 0; pos + 1 < n; ++pos)
        fill_row(pos);
    ContractionOrder out;
    out.pairs.reserve(n - 1);
    while (alive.size() > 1) {
        // The cheapest pair, the earliest (by a, then b) among equal costs.
        std::size_t pa = 0;
        for (std::size_t pos = 1; pos + 1 < alive.size(); ++pos)
            if (row[alive[pos]].cost < row[alive[pa]].cost) pa = pos;
        const std::size_t a = alive[pa], b = row[a].with;
        std::size_t pb = pa + 1;
        while (alive[pb] != b)
            ++pb;
        out.flops += row[a].cost;
        out.pairs.emplace_back(pa, pb);
        if (alive.size() == 2) break; // the last pair: what it keeps is the result's
        // Keep the indices the output or another remaining operand needs.
        const std::uint64_t u = mask[a] | mask[b];
        std::uint64_t keep = 0;
        for (std::uint64_t m = u; m; m &= m - 1) {
            const int i = __builtin_ctzll(m);
            const std::uint64_t one = std::uint64_t{1} << i;
            const int others = count[static_cast<std::size_t>(i)] - ((mask[a] & one) != 0) -
                               ((mask[b] & one) != 0);
            if ((out_mask & one) || others > 0) keep |= one;
        }
        for (std::uint64_t m = mask[a]; m; m &= m - 1)
            --count[static_cast<std::size_t>(__builtin_ctzll(m))];
        for (std::uint64_t m = mask[b]; m; m &= m - 1)
            --count[static_cast<std::size_t>(__builtin_ctzll(m))];
        for (std::uint64_t m = keep; m; m &= m - 1)
            ++count[static_cast<std::size_t>(__builtin_ctzll(m))];
        mask[a] = keep;
        alive.erase(alive.begin() + static_cast<std::ptrdiff_t>(pb));
        // Rows before a: their pair with a changed, their pair with b is gone. Rows after it
        // hold no pair with a; their pair with b is gone.
        for (std::size_t pos = 0; pos + 1 < alive.size(); ++pos) {
            const std::size_t s = alive[pos];
            if (s == a || row[s].with == a || row[s].with == b) {
                fill_row(pos);
            } else if (pos < pa) {
                const double f = pair_cost(s, a);
                // a precedes the current partner only if its slot is lower (slots keep order).
                if (f < row[s].cost || (f == row[s].cost && a < row[s].with)) row[s] = {f, a};
            }
        }
    }
    return out;
}

} // namespace

ContractionOrder contraction_order(std::vector<FlatSet<IndexId>> live,
                                   const FlatMap<IndexId, double>& extent,
                                   const FlatSet<IndexId>& output) {
    ContractionOrder out;
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
    if (auto fast = greedy_in_bits(live, extent, output)) return *fast;
    return contraction_order_by_sets(std::move(live), extent, output);
}

ContractionOrder contraction_order_by_sets(std::vector<FlatSet<IndexId>> live,
                                           const FlatMap<IndexId, double>& extent,
                                           const FlatSet<IndexId>& output) {
    ContractionOrder out;
    const std::size_t n = live.size();
    if (n < 2) return out;
    out.pairs.reserve(n - 1);
    // Each pair's cost once (the merged operand's pairs are recomputed): a product of n
    // operands costs O(n^2) pair costs; finding the cheapest is still O(n^2) per step.
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
