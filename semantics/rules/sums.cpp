// Sums and quotients: NOTATION.md section 6, "Other nodes". The operands of + and - agree
// per mesh axis; one lacking the sharded index is a broadcast and slices locally; P + P stays
// P, and P next to R is reduced first. A quotient may be partial only in its numerator.
#include "internal.hpp"

namespace shardscope::semantics::detail {

std::optional<Value> Evaluator::combine(std::vector<Value>& ops, bool quotient,
                                        const ast::SourceRange& at, std::vector<bool> negated) {
    const int axes = static_cast<int>(ctx_.mesh.axes.size());
    for (int k = 0; k < axes; ++k) {
        keep_one_sharded_index(ops, k, at, "the operation");
        std::optional<IndexKey> sharded;
        for (const auto& v : ops)
            if (auto i = v.sharded_on(k)) sharded = i;
        // Partial operands: P + P -> P; otherwise reduce. A quotient's denominator is
        // reduced; its numerator may stay partial over a replicated denominator.
        // Only P(sum) operands add up to a P(sum) (a partial max is reduced below).
        std::size_t partial_count = 0;
        for (const auto& v : ops)
            if (v.partial.is(k, PartialOp::Sum)) ++partial_count;
        for (std::size_t o = 0; o < ops.size(); ++o) {
            auto& v = ops[o];
            if (!v.partial.has(k)) continue;
            // A sum of partial maxes (or a difference, or a quotient of one) is no partial max:
            // only P(sum) is linear.
            const bool summable = v.partial.at(k) == PartialOp::Sum;
            const bool keep = summable && (quotient ? (o == 0 && !sharded)
                                                    : (partial_count == ops.size() && !sharded));
            if (keep) continue;
            const std::string why =
                !summable  ? "a partial max is not a partial max once added to, subtracted from "
                             "or divided"
                : quotient ? "a quotient may be partial only in its numerator, over a "
                             "replicated denominator"
                           : "partial and non-partial terms cannot be added";
            fixed_up = true;
            partial_needs_reduction(v, k, at, "here");
            if (sharded && v.has(*sharded) && summable) {
                const int c = choose(2, false);
                fixed_up = true;
                if (c == 0)
                    reduce_scatter(v, k, *sharded, why);
                else
                    all_reduce(v, k, why);
            } else {
                all_reduce(v, k, why);
            }
        }
    }
    // One common layout for every operand: per index, the longest axis list among the
    // operands (major to minor), then the axes other operands shard it over. Each axis shards
    // at most one index by now (keep_one_sharded_index). An operand lacking an axis slices
    // locally; one holding the axes in another order (k_{10} against k_{01}) is redistributed.
    FlatMap<IndexKey, AxisList> target;
    for (const auto& v : ops)
        for (const auto& [i, list] : v.sharding)
            if (list.size() > target[i].size()) target[i] = list;
    for (const auto& v : ops)
        for (const auto& [i, list] : v.sharding)
            for (int k : list) {
                auto& t = target[i];
                if (std::find(t.begin(), t.end(), k) == t.end()) t.push_back(k);
            }
    for (auto& v : ops) {
        Value want = v;
        for (const auto& [i, list] : target)
            if (v.has(i)) want.sharding[i] = list;
        if (want.sharding == v.sharding) continue;
        // Axes missing at the minor end slice locally, in the target's order (free).
        for (const auto& [i, list] : target) {
            if (!v.has(i)) continue;
            auto it = v.sharding.find(i);
            const std::size_t have = it == v.sharding.end() ? 0 : it->second.size();
            if (have > list.size() ||
                (have && !std::equal(it->second.begin(), it->second.end(), list.begin())))
                continue;
            for (std::size_t a = have; a < list.size(); ++a)
                slice(v, list[a], i, "the operands of an elementwise operation share one layout");
        }
        if (want.sharding == v.sharding) continue;
        transition(v, want, at, "the operands of an elementwise operation share one layout");
        if (failed) return std::nullopt;
    }
    Value out;
    out.name = temp_name();
    out.elem_bytes = promoted_bytes(ops);
    IndexSet seen;
    for (const auto& v : ops) {
        for (const auto& d : v.dims)
            for (const auto& i : d.parts)
                if (seen.insert(i).second) {
                    out.dims.push_back({{i}, text_of(i)});
                    if (auto it = v.sharding.find(i); it != v.sharding.end())
                        out.sharding[i] = it->second;
                }
        for (const auto& [k, op] : v.partial)
            out.partial.set(k, op);
    }
    double moved = 0;
    for (const auto& v : ops)
        moved += local_bytes(v);
    add_local(StepKind::Compute, out, quotient ? "divide" : "add", "elementwise (local)",
              local_elements(out), moved + local_bytes(out));
    negated.resize(ops.size(), false);
    compute(quotient ? OpKind::Divide : OpKind::Add, ops, out).negated =
        quotient ? std::vector<bool>{} : negated;
    return out;
}

std::optional<Value> Evaluator::eval_node(const ast::Sum& s, const ast::Expr& e,
                                          const IndexSet& outside) {
    auto ops = eval_operands(s.terms, outside);
    if (!ops) return std::nullopt;
    if (ops->size() == 1) {
        // Negation is linear: placements pass through.
        if (s.negated.empty() || !s.negated[0]) return std::move(ops->front());
        // A negated partial max is a partial min: reduce first.
        const int axes = static_cast<int>(ctx_.mesh.axes.size());
        for (int k = 0; k < axes; ++k)
            if (ops->front().partial.is(k, PartialOp::Max))
                partial_max_needs_reduction(ops->front(), k, e.range, "a negation");
        const int in = ops->front().id;
        Value out = std::move(ops->front());
        out.name = temp_name();
        add_local(StepKind::Compute, out, "neg", "negation (local)", local_elements(out),
                  2 * local_bytes(out));
        compute(OpKind::Linear, in, out).function = "neg";
        return out;
    }
    return combine(*ops, false, e.range, s.negated);
}

std::optional<Value> Evaluator::eval_node(const ast::Quotient& q, const ast::Expr& e,
                                          const IndexSet& outside) {
    IndexSet in_num, in_den;
    collect(*q.num, in_num);
    collect(*q.den, in_den);
    IndexSet out_num = outside, out_den = outside;
    out_num.insert(in_den.begin(), in_den.end());
    out_den.insert(in_num.begin(), in_num.end());
    auto num = eval_shared(*q.num, out_num);
    auto den = num ? eval_shared(*q.den, out_den) : std::nullopt;
    if (!num || !den) return std::nullopt;
    std::vector<Value> ops{std::move(*num), std::move(*den)};
    return combine(ops, true, e.range);
}

} // namespace shardscope::semantics::detail
