// One product (einsum) node: NOTATION.md section 6, rules 1-4, per mesh axis k.
//   Rule 1: nothing on k is sharded or partial: the result is R on k.
//   Rule 2: one index i sharded on k: operands holding i unsharded slice locally; i kept
//           gives S(i), i contracted gives P(sum).
//   Rule 3: two different indices sharded on k: all-gather all but one (the search tries
//           each; the cheapest wins, section 8).
//   Rule 4: a partial operand meets only replicated operands (P x R -> P); P x P, or P next
//           to a sharded index, reduces first (all-reduce, or reduce-scatter onto the index).
// The local compute is priced pairwise in the greedy order of contraction_order.hpp.
#include "contraction_order.hpp"
#include "internal.hpp"

namespace shardscope::semantics::detail {

std::optional<Value> Evaluator::eval_node(const ast::Product& p, const ast::Expr& e,
                                          const IndexSet& outside) {
    auto ops = eval_operands(p.factors, outside);
    if (!ops) return std::nullopt;
    // Numbers are never negative (a minus sign is a negated term): scaling by one keeps a
    // partial max a partial max.
    // No flags at all when no factor is a number (most products): empty reads as none.
    std::vector<bool> constant;
    for (std::size_t f = 0; f < p.factors.size(); ++f)
        if (std::holds_alternative<ast::Number>(p.factors[f].node)) {
            constant.resize(p.factors.size());
            constant[f] = true;
        }
    return einsum(*ops, outside, e.range, constant);
}

void Evaluator::partial_needs_reduction(const Value& v, int k, const ast::SourceRange& at,
                                        const char* where) {
    not_as_written(Code::S211, at,
                   "partial operand " + v.name + " needs a reduction on " + ctx_.axis_label(k) +
                       " " + where,
                   "reduce it in an earlier statement, or write the collective explicitly", false);
}

void Evaluator::partial_max_needs_reduction(Value& v, int k, const ast::SourceRange& at,
                                            const std::string& what) {
    not_as_written(Code::S215, at,
                   v.name + " is a partial max over " + ctx_.axis_label(k) + "; " + what +
                       " does not keep a maximum a maximum, so it is all-reduced first",
                   "take the maximum in an earlier statement (all-reduced), or write AllReduce "
                   "explicitly",
                   true);
    all_reduce(v, k, "a partial max must be complete before " + what);
}

void Evaluator::keep_one_sharded_index(std::vector<Value>& ops, int k, const ast::SourceRange& at,
                                       const char* what) {
    // Most products shard one index per axis, or none: nothing to keep then.
    const IndexKey* first = nullptr;
    bool several = false;
    for (const auto& v : ops)
        if (const auto* i = v.sharded_index(k)) {
            if (!first)
                first = i;
            else if (!(*first == *i))
                several = true;
        }
    if (!several) return;
    std::vector<IndexKey> distinct;
    for (const auto& v : ops)
        if (auto i = v.sharded_index(k);
            i && std::find(distinct.begin(), distinct.end(), *i) == distinct.end())
            distinct.push_back(*i);
    if (distinct.size() < 2) return;
    fixed_up = true;
    const auto keep =
        distinct[static_cast<std::size_t>(choose(static_cast<int>(distinct.size()), false))];
    std::string names;
    for (const auto& d : distinct)
        names += (names.empty() ? "" : " and ") + d.text();
    const std::string why = names + " are both sharded on " + ctx_.axis_label(k);
    for (auto& v : ops)
        if (auto i = v.sharded_index(k); i && !(*i == keep)) all_gather(v, k, why);
    not_as_written(Code::S212, at, why + ": " + what + " cannot be computed locally",
                   "all-gather one operand over " + ctx_.axis_label(k) + " explicitly", false);
}

void Evaluator::reduce_partial_maxes(std::vector<Value>& ops, int k, const IndexSet& outside,
                                     const ast::SourceRange& at,
                                     const std::vector<bool>& constant) {
    // A partial max survives a product only with non-negative numbers (positive scaling)
    // and when none of its indices is summed: max(a) * y or sum_i max(a_i) is no max.
    for (std::size_t o = 0; o < ops.size(); ++o) {
        if (!ops[o].partial.is(k, PartialOp::Max)) continue;
        bool keeps = true;
        for (std::size_t q = 0; q < ops.size(); ++q)
            if (q != o && !(q < constant.size() && constant[q])) keeps = false;
        for (const auto& i : ops[o].indices())
            if (!outside.count(i)) keeps = false;
        if (keeps) continue;
        fixed_up = true;
        partial_max_needs_reduction(ops[o], k, at, "a product");
    }
}

void Evaluator::rule4_partial_meets_replicated(std::vector<Value>& ops, int k,
                                               const ast::SourceRange& at) {
    bool any_partial = false;
    for (const auto& v : ops)
        any_partial = any_partial || v.partial.has(k);
    std::vector<std::size_t> partials;
    std::optional<IndexKey> any_sharded;
    for (std::size_t o = 0; any_partial && o < ops.size(); ++o) {
        if (ops[o].partial.has(k)) partials.push_back(o);
        if (auto i = ops[o].sharded_on(k)) any_sharded = i;
    }
    if (partials.empty() || (partials.size() <= 1 && !any_sharded)) return;
    fixed_up = true;
    // Keep one partial operand when nothing on k is sharded (P x R -> P).
    const std::size_t first = any_sharded ? 0 : 1;
    // The same partial value twice (`C C`, both reads of C in one layout, or one
    // intermediate) is reduced once: the other operand reads the reduced value. twin[q]: the
    // first operand from `first` on equal to the q-th as they came (q itself when none before
    // it); kept_twin: the first equal to the kept one (none: partials.size()).
    auto same = [&](std::size_t p, std::size_t q) {
        const Value& a = ops[partials[p]];
        const Value& b = ops[partials[q]];
        return a.name == b.name && a.dims == b.dims && a.sharding == b.sharding &&
               a.partial == b.partial;
    };
    SmallVec<std::size_t, 8> twin;
    for (std::size_t q = 0; q < partials.size(); ++q) {
        std::size_t p = first;
        while (p < q && !same(p, q))
            ++p;
        twin.push_back(p < q ? p : q);
    }
    std::size_t kept_twin = partials.size();
    if (first == 1)
        for (std::size_t q = 1; q < partials.size() && kept_twin == partials.size(); ++q)
            if (same(0, q)) kept_twin = q;
    for (std::size_t q = first; q < partials.size(); ++q) {
        auto& v = ops[partials[q]];
        if (twin[q] != q) { // reduced already, as its twin
            v = ops[partials[twin[q]]];
            continue;
        }
        const bool can_scatter = any_sharded && v.has(*any_sharded);
        const int c = choose(can_scatter ? 2 : 1, false);
        const std::string why =
            "a partial operand may meet only replicated operands on " + ctx_.axis_label(k);
        if (c == 1)
            reduce_scatter(v, k, *any_sharded, why);
        else
            all_reduce(v, k, why);
        partial_needs_reduction(v, k, at, "before this product");
    }
    if (kept_twin < partials.size()) ops[partials[0]] = ops[partials[kept_twin]];
}

void Evaluator::rule2_one_axis_list(std::vector<Value>& ops, const IndexOrder& order,
                                    const ast::SourceRange& at) {
    // Most products agree already: no index is sharded by two operands over different lists.
    // Then no index below finds two lists and nothing gathers, so none can later: the scan
    // of every index for every operand is skipped.
    bool differ = false;
    for (std::size_t a = 0; a + 1 < ops.size() && !differ; ++a)
        for (const auto& [i, list] : ops[a].sharding) {
            for (std::size_t b = a + 1; b < ops.size() && !differ; ++b)
                if (auto it = ops[b].sharding.find(i);
                    it != ops[b].sharding.end() && !(it->second == list))
                    differ = true;
            if (differ) break;
        }
    if (!differ) return;
    for (const IndexKey i : order) {
        // The distinct lists, as pointers into the operands' shardings (read before any
        // gather below changes them).
        SmallVec<const AxisList*, 8> lists;
        for (const auto& v : ops)
            if (auto it = v.sharding.find(i);
                it != v.sharding.end() &&
                std::none_of(lists.begin(), lists.end(),
                             [&](const AxisList* l) { return *l == it->second; }))
                lists.push_back(&it->second);
        if (lists.size() < 2) continue; // one list (or none) agrees with itself
        auto is_prefix = [](const AxisList& a, const AxisList& b) {
            return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
        };
        AxisList target;
        for (const auto* l : lists)
            if (l->size() > target.size()) target = *l;
        bool agree = true;
        for (const auto* l : lists)
            agree &= is_prefix(*l, target);
        if (!agree) {
            fixed_up = true;
            target =
                *lists[static_cast<std::size_t>(choose(static_cast<int>(lists.size()), false))];
            for (auto& v : ops) {
                auto it = v.sharding.find(i);
                if (it == v.sharding.end()) continue;
                // Gather, minor first, every axis past the common prefix with the target.
                auto mine = it->second;
                std::size_t common = 0;
                while (common < mine.size() && common < target.size() &&
                       mine[common] == target[common])
                    ++common;
                if (common < mine.size())
                    all_gather(v, mine[common],
                               "the mesh axes of " + i.text() + " differ between operands");
            }
            not_as_written(Code::S212, at,
                           "the operands shard " + i.text() + " over different mesh axes",
                           "all-gather one operand first, explicitly", false);
        }
    }
}

void Evaluator::rule2_kept_or_contracted(std::vector<Value>& ops, int k, const IndexSet& outside,
                                         Value& out) {
    const IndexKey* sharded = nullptr; // valid until a gather below
    for (const auto& v : ops)
        if (const auto* i = v.sharded_index(k)) sharded = i;
    // Rule 4's P x R -> P: the result is partial where an operand is.
    for (const auto& v : ops)
        if (v.partial.has(k)) out.partial.set(k, v.partial.at(k));
    if (!sharded) return;
    // Kept: S(i) (the result's sharding is set with the local slices, below).
    if (outside.count(*sharded) > 0) return;
    // Contraction over a sharded index: P(sum). Gathering first is the alternative.
    const int c = choose(2, true);
    if (c == 1) {
        const auto why = "alternative: gather before contracting " + sharded->text();
        for (auto& v : ops)
            if (v.sharded_index(k)) all_gather(v, k, why);
        return;
    }
    out.partial.set(k, PartialOp::Sum);
}

void Evaluator::rule1_replicated(const std::vector<Value>& ops, int k, Value& out) {
    // Gathering an index over a major axis gathers its minor axes too (all_gather): an axis
    // taken as P(sum) above that no operand shards any more is contracted whole, not
    // partially (no operand is partial on an axis that shards an index: rule 4).
    bool sharded = false;
    for (const auto& v : ops)
        sharded |= v.sharded_index(k) != nullptr;
    bool partial_operand = false;
    for (const auto& v : ops)
        partial_operand |= v.partial.has(k);
    if (!sharded && !partial_operand) out.partial.erase(k);
}

void Evaluator::rule2_slice_locally(std::vector<Value>& ops, const IndexOrder& order,
                                    const IndexSet& outside, Value& out) {
    for (const IndexKey i : order) {
        AxisList target;
        for (const auto& v : ops)
            if (auto it = v.sharding.find(i);
                it != v.sharding.end() && it->second.size() > target.size())
                target = it->second;
        if (target.empty()) continue;
        for (auto& v : ops) {
            if (!v.has(i)) continue;
            // Looked up before inserting: most operands hold the list already.
            if (auto it = v.sharding.find(i);
                it != v.sharding.end() && it->second.size() >= target.size())
                continue;
            auto& mine = v.sharding[i];
            while (mine.size() < target.size()) {
                const int in = v.id;
                const int k = target[mine.size()];
                add_local(StepKind::Slice, v, {},
                          report_ ? cat("slice ", v.name, " locally along ", i.text(), " over ",
                                        ctx_.axis_label(k), " (free)")
                                  : std::string());
                i.assign_to(steps.back().to_index);
                mine.push_back(k);
                flow(in, v);
            }
        }
        if (outside.count(i)) out.sharding[i] = target;
    }
}

std::optional<Value> Evaluator::einsum(std::vector<Value>& ops, const IndexSet& outside,
                                       const ast::SourceRange& at,
                                       const std::vector<bool>& constant) {
    const int axes = static_cast<int>(ctx_.mesh.axes.size());
    // The fixes, axis by axis: what the product cannot compute as its operands are. The two
    // for partial operands only where one is (most products have none; no fix makes an
    // operand partial, so none becomes one on a later axis).
    const bool partial =
        std::any_of(ops.begin(), ops.end(), [](const Value& v) { return !v.partial.empty(); });
    for (int k = 0; k < axes; ++k) {
        if (partial) {
            reduce_partial_maxes(ops, k, outside, at, constant);
            // Rule 4: a partial operand may meet only replicated operands.
            rule4_partial_meets_replicated(ops, k, at);
        }
        // Rule 3: two different indices sharded on the same axis.
        keep_one_sharded_index(ops, k, at, "the product");
    }
    // Indices: result keeps those needed outside this product.
    IndexOrder order;
    for (const auto& v : ops)
        for (const auto& d : v.dims)
            for (const auto i : d.parts)
                if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
    Value out;
    out.name = temp_name();
    out.elem_bytes = promoted_bytes(ops);
    out.dims.reserve(order.size());
    for (const IndexKey i : order)
        if (outside.count(i)) {
            auto& d = out.dims.emplace_back(); // in place: no temporary to move
            d.parts.push_back(i);
            if (const auto c = i.letter())
                d.text.push_back(static_cast<char>(c));
            else
                d.text = text_of(i);
        }
    // Rule 2 (one index, one list of axes): per index, the operands' axis lists agree.
    rule2_one_axis_list(ops, order, at);
    // Rule 2 (and rule 4's P x R -> P): per axis, the result of the one sharded index.
    for (int k = 0; k < axes; ++k)
        rule2_kept_or_contracted(ops, k, outside, out);
    // Rule 1: nothing sharded or partial on an axis (any more) gives R there. It can only
    // take back a partial axis of the result: the others are R or S already.
    for (int k = 0; k < axes; ++k)
        if (out.partial.has(k)) rule1_replicated(ops, k, out);
    // Rule 2: operands holding a sharded index on fewer axes (or none) slice locally.
    rule2_slice_locally(ops, order, outside, out);
    // Local compute: pairwise contraction, greedily the cheapest pair first.
    double flops = 0, moved = 0;
    std::vector<IndexSet> live;
    // The equation in words only on the reporting run: the search reads costs, not words.
    std::string spec;
    if (report_) spec.reserve(64); // one block for most equations
    // Two operands (most products) are one pair, whose indices are `order`: no sets for them.
    const bool one_pair = ops.size() == 2;
    if (!one_pair) live.reserve(ops.size());
    for (const auto& v : ops) {
        if (!one_pair) live.push_back(v.indices());
        moved += local_bytes(v);
        if (!report_) continue;
        if (!spec.empty()) spec += ", ";
        for (std::size_t d = 0; d < v.dims.size(); ++d) {
            if (d) spec += ' ';
            spec += v.dims[d].text;
        }
    }
    auto local_ext = [&](IndexKey i) {
        std::int64_t n = 1;
        for (const auto& v : ops)
            if (auto it = v.sharding.find(i); it != v.sharding.end()) {
                for (int k : it->second)
                    n *= ctx_.axis_size(k);
                break;
            }
        return static_cast<double>(ceil_div(ctx_.range(i), n));
    };
    if (one_pair) {
        // The pair's cost as contraction_order computes it: the extents multiplied in index
        // order.
        IndexOrder u = order;
        std::sort(u.begin(), u.end());
        flops = 2;
        for (const auto i : u)
            flops *= local_ext(i);
    } else if (live.size() > 2) {
        // Each index's local extent once; contraction_order reads ids (in the same order).
        FlatMap<IndexId, double> ext;
        std::vector<FlatSet<IndexId>> sets(live.size());
        for (std::size_t o = 0; o < live.size(); ++o)
            for (const auto i : live[o]) {
                const auto id = i.id();
                if (!ext.count(id)) ext[id] = local_ext(i);
                sets[o].insert(id);
            }
        FlatSet<IndexId> outside_ids;
        for (const auto i : outside)
            outside_ids.insert(i.id());
        flops = contraction_order(std::move(sets), ext, outside_ids).flops;
    }
    if (report_) {
        spec += " -> ";
        for (std::size_t d = 0; d < out.dims.size(); ++d) {
            if (d) spec += ' ';
            spec += out.dims[d].text;
        }
    }
    moved += local_bytes(out);
    add_local(StepKind::Compute, out, std::move(spec), "local einsum", flops, moved, true);
    compute(OpKind::Einsum, ops, out);
    return out;
}

} // namespace shardscope::semantics::detail
