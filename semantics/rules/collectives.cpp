// Explicit collectives: NOTATION.md section 4 (AllReduce_{r_0}(x), AllGather_{i_0}(x),
// ReduceScatter_{i_0}(x) written as functions) and section 8 (several axes in one call are
// one collective over the group of their devices); Permute_{i_k}(x), one step of a ring (the
// rotation of ring attention: docs/reference.md, "Explicit collectives"). What is written is
// done, and a collective that does not apply to its argument's placement is an error (S123,
// S124, S125).
#include "internal.hpp"

#include "semantics/cost.hpp"
#include "semantics/redistribute.hpp"

namespace shardscope::semantics::detail {

Value Evaluator::sum_local_chunk(Value v, const IndexId& i) {
    IndexSet gone;
    gone.insert(i);
    const double elems = local_elements(v);
    Value out = without(v, gone, PartialOp::Sum);
    add_local(StepKind::Compute, out, "sum " + i.text(), "sum over the local chunk of " + i.text(),
              elems, local_bytes(v));
    compute(OpKind::Reduce, v.id, out).reduce = ReduceFn::Sum;
    return out;
}

std::optional<Value> Evaluator::ring_permute(const ast::Call& c, Value v, const ast::Expr& e) {
    const std::string usage = "as in Permute_{r_0}(k_{r_0 u d}): one step round the ring of axis 0";
    if (c.indices.size() != 1 || c.indices.front().axes.empty()) {
        error(Code::S123, e.range,
              "Permute needs one index and the mesh axes of its ring, " + usage);
        return std::nullopt;
    }
    const auto& written = c.indices.front();
    const IndexId i = id_of(written);
    std::vector<int> ring;
    std::string label;
    for (const auto& a : written.axes)
        for (int k : ctx_.resolve_axis(a, report_)) {
            ring.push_back(k);
            label += (label.empty() ? "" : ", ") + ctx_.axis_label(k);
        }
    if (ring.empty()) return std::nullopt; // an unknown axis, reported
    const std::string what =
        "Permute moves the blocks of " + i.text() + " round the ring over " + label;
    // The ring is the order of i's blocks: i must be split over exactly these axes.
    const auto it = v.sharding.find(i);
    if (!v.has(i) || it == v.sharding.end() || it->second.to_vector() != ring) {
        std::string have = "not sharded";
        if (!v.has(i)) {
            have = "not an index of it";
        } else if (it != v.sharding.end()) {
            have = "sharded over ";
            for (std::size_t n = 0; n < it->second.size(); ++n)
                have += (n ? ", " : "") + ctx_.axis_label(it->second[n]);
        }
        error(Code::S124, e.range, what + ", but in " + v.name + " " + i.text() + " is " + have,
              "shard " + i.text() + " over exactly the ring's axes, major first");
        return std::nullopt;
    }
    for (const auto& [k, op] : v.partial) {
        error(Code::S124, e.range,
              what + ", but " + v.name + " is partial over " + ctx_.axis_label(k) +
                  ": a permute moves whole values",
              "complete it first, e.g. AllReduce_{...}");
        return std::nullopt;
    }
    std::int64_t g = 1;
    for (int k : ring)
        g *= ctx_.axis_size(k);
    const std::int64_t n = ctx_.range(i);
    if (n % g != 0) {
        error(Code::S124, e.range,
              what + ", but " + i.text() + "'s range " + std::to_string(n) +
                  " does not divide into " + std::to_string(g) +
                  " equal blocks: the value would not move by whole blocks");
        return std::nullopt;
    }
    const auto pairs = ctx_.mesh.ring_pairs(ring);
    if (pairs.empty()) return v; // a ring of one device: nothing moves
    const double bytes = local_bytes(v);
    const auto sharding = v.sharding;
    const std::string name = v.name;
    permute(v, sharding, pairs, ring, bytes,
            timing_in_steps(StepKind::Permute, 1, bytes, group_link(ctx_.links, ring)), {});
    // Said first: the value moves although the layout stays.
    steps.back().text.reason = "permute " + name + " one block along " + i.text() +
                               " round the ring over " + label + " (the layout stays; device " +
                               messages_text(pairs) + "), written explicitly";
    steps.back().from_index = i;
    steps.back().shift = n / g;
    return v;
}

std::optional<Value> Evaluator::explicit_collective(const ast::Call& c, Value v,
                                                    const ast::Expr& e) {
    if (c.function == "Permute") return ring_permute(c, std::move(v), e);
    std::vector<std::pair<IndexId, int>> targets; // index, axis
    for (const auto& i : c.indices) {
        if (i.axes.empty()) {
            // AllReduce_{r}(x_{r}): every axis r is sharded on.
            if (auto it = v.sharding.find(id_of(i)); it != v.sharding.end())
                for (int k : it->second)
                    targets.push_back({id_of(i), k});
        }
        for (const auto& a : i.axes)
            for (int k : ctx_.resolve_axis(a, report_))
                targets.push_back({id_of(i), k});
    }
    if (targets.empty()) {
        error(Code::S123, e.range,
              c.function + " needs the mesh axes it works over, as in " + c.function + "_{r_0}(x)");
        return std::nullopt;
    }
    const std::string why = "written explicitly";
    // Several axes in one call are one collective over their group: AllReduce_{r_{01}} of a
    // value partial on both, AllGather_{i_{01}} of an index sharded minor-most on 0 then 1,
    // ReduceScatter_{i_{01}} of a value partial on both (NOTATION.md section 8: one ring over
    // the product of their devices).
    if (targets.size() >= 2) {
        std::vector<int> ks;
        bool same_index = true;
        for (const auto& t : targets) {
            ks.push_back(t.second);
            same_index = same_index && t.first == targets.front().first;
        }
        std::sort(ks.begin(), ks.end());
        const bool distinct = std::adjacent_find(ks.begin(), ks.end()) == ks.end();
        ks.clear();
        for (const auto& t : targets)
            ks.push_back(t.second);
        auto all_partial = [&] {
            for (int k : ks)
                if (!v.partial.has(k) || v.partial.at(k) != v.partial.at(ks.front())) return false;
            return true;
        };
        const IndexId i = targets.front().first;
        if (distinct && same_index && c.function == "AllReduce" && v.sharded_index(ks.front()) &&
            *v.sharded_index(ks.front()) == i) {
            v = sum_local_chunk(std::move(v), i);
        }
        if (distinct && c.function == "AllReduce" && all_partial()) {
            group_collective(v, StepKind::AllReduce, ks, nullptr, nullptr, why);
            return v;
        }
        if (distinct && same_index && c.function == "ReduceScatter" && all_partial() && v.has(i)) {
            group_collective(v, StepKind::ReduceScatter, ks, nullptr, &i, why);
            return v;
        }
        if (distinct && same_index && c.function == "AllGather") {
            auto it = v.sharding.find(i);
            if (it != v.sharding.end() && it->second.size() >= ks.size()) {
                const auto list = it->second.to_vector();
                if (std::equal(ks.rbegin(), ks.rend(), list.rbegin())) {
                    group_collective(v, StepKind::AllGather, ks, &i, nullptr, why);
                    return v;
                }
            }
        }
    }
    std::vector<int> gathered; // axes an AllGather already gathered
    for (const auto& target : targets) {
        const IndexId i = target.first; // named: lambdas below capture it (clang 14)
        const int k = target.second;
        if (c.function == "AllReduce") {
            if (v.partial.has(k)) {
                all_reduce(v, k, why);
            } else if (v.sharded_index(k) && *v.sharded_index(k) == i) {
                // A sum over a device index: the local sum over this device's chunk,
                // then the cross-device sum is the all-reduce.
                v = sum_local_chunk(std::move(v), i);
                all_reduce(v, k, why);
            } else {
                error(Code::S124, e.range,
                      "AllReduce over " + ctx_.axis_label(k) + ", but " + v.name +
                          " is not partial there");
                return std::nullopt;
            }
        } else if (c.function == "AllGather") {
            // Gathering an index over a major axis gathers its minor axes too (all_gather):
            // AllGather_{i_{01}} is done once axis 0 is.
            if (std::find(gathered.begin(), gathered.end(), k) != gathered.end()) continue;
            if (!v.sharded_index(k)) {
                error(Code::S124, e.range,
                      "AllGather over " + ctx_.axis_label(k) + ", but " + v.name +
                          " is not sharded there");
                return std::nullopt;
            }
            if (auto it = v.sharding.find(*v.sharded_index(k)); it != v.sharding.end())
                for (auto a = std::find(it->second.begin(), it->second.end(), k);
                     a != it->second.end(); ++a)
                    gathered.push_back(*a);
            all_gather(v, k, why);
        } else if (c.function == "ReduceScatter") {
            if (!v.partial.has(k) || !v.has(i)) {
                error(Code::S124, e.range,
                      "ReduceScatter onto " + i.text() + " over " + ctx_.axis_label(k) +
                          " needs a partial value with index " + i.text());
                return std::nullopt;
            }
            reduce_scatter(v, k, i, why);
        } else {
            error(Code::S125, e.range, c.function + " is not supported as a function yet",
                  "write the redistribution as a chain, e.g. x_{i_0 j} -> x_{i j_0}");
            return std::nullopt;
        }
    }
    return v;
}

} // namespace shardscope::semantics::detail
