// Functions: NOTATION.md section 6, "Other nodes". Non-linear elementwise functions,
// softmax and max need a complete input, so a partial one is reduced first (S214); linear
// functions and the linear reductions sum and mean pass P(sum) through. Reducing along a
// sharded index leaves the result partial (sum_v: P(sum), max_v: P(max)); softmax along a
// sharded index needs the row maximum and sum over the axis (two small all-reduces) or an
// all-gather, whichever is cheaper (S213).
#include "internal.hpp"

namespace shardscope::semantics::detail {

std::optional<Value> Evaluator::eval_node(const ast::Call& c, const ast::Expr& e,
                                          const IndexSet& outside) {
    // The argument must keep the indices the call names (what it reduces or normalises over).
    std::optional<Value> arg;
    if (c.indices.empty()) {
        arg = eval(*c.arg, outside);
    } else {
        IndexSet inner = outside;
        for (const auto& i : c.indices)
            inner.insert(key_of(i));
        arg = eval(*c.arg, inner);
    }
    if (!arg) return std::nullopt;
    Value v = std::move(*arg);
    const auto kind = ctx_.function_kind(c.function);
    const int axes = static_cast<int>(ctx_.mesh.axes.size());
    const auto elems = local_elements(v);
    const auto steps_at_elems = steps.size(); // no step since: `v` is as `elems` counted it
    // The result takes over the argument's layout (`v` is not used after it).
    // A step since (a reduction of a partial input, a softmax's all-gather) may have changed
    // the local block: the function then runs on the new one, FLOPs and bytes alike.
    auto finish = [&](const std::string& detail, OpKind op = OpKind::Function) {
        const int in = v.id;
        const double n = steps.size() == steps_at_elems ? elems : local_elements(v);
        const double moved = 2 * n * v.elem_bytes;
        Value out = std::move(v);
        out.name = temp_name();
        add_local(StepKind::Compute, out, report_ ? detail : std::string(),
                  report_ ? cat(c.function, " (local)") : std::string(), n, moved);
        auto& s = compute(op, in, out);
        s.function = c.function;
        if (op == OpKind::Softmax) s.index = id_of(c.indices[0]);
        return out;
    };
    switch (kind) {
    case ast::FunctionKind::Linear:
        // Only `scale` (by 1/2) is known to be a positive scaling that keeps a partial max.
        if (c.function != "scale")
            for (int k = 0; k < axes; ++k)
                if (v.partial.is(k, PartialOp::Max))
                    partial_max_needs_reduction(v, k, e.range, c.function.c_str());
        return finish(c.function, OpKind::Linear);
    case ast::FunctionKind::Elementwise: {
        std::vector<int> reduce;
        for (int k = 0; k < axes; ++k)
            if (v.partial.has(k)) {
                const auto msg = "the input of " + c.function + " is partial over " +
                                 ctx_.axis_label(k) + "; " + c.function +
                                 " is non-linear, so it is all-reduced first";
                // A warning, not a note: the all-reduce changes the data, not only its
                // placement, and a note is hidden by check -q (issue 20).
                const char* fix = "reduce the input in an earlier statement, or write "
                                  "AllReduce explicitly";
                if (ctx_.strict)
                    not_as_written(Code::S214, e.range, msg, fix, true);
                else
                    warning(Code::S214, e.range, msg, fix);
                reduce.push_back(k);
            }
        if (!reduce.empty()) // the reason's words only when something is reduced
            complete(v, reduce, e.range, c.function + " is non-linear and needs a complete input");
        return finish(c.function);
    }
    case ast::FunctionKind::Reduction: {
        if (c.indices.empty()) {
            error(Code::S120, e.range,
                  c.function + " needs the index it reduces over, as in " + c.function + "_s(x)");
            return std::nullopt;
        }
        const PartialOp op = c.function == "max" ? PartialOp::Max : PartialOp::Sum;
        std::vector<int> reduce;
        for (int k = 0; k < axes; ++k)
            if (v.partial.has(k) && v.partial.at(k) != op) reduce.push_back(k);
        if (!reduce.empty())
            complete(v, reduce, e.range,
                     c.function + " cannot pass a P(" +
                         std::string(partial_op_name(v.partial.at(reduce.front()))) + ") input");
        IndexSet gone;
        for (const auto& i : c.indices) {
            if (!v.has(key_of(i))) {
                error(Code::S121, i.range,
                      c.function + " reduces over " + id_of(i).text() +
                          ", which its argument does not have");
                return std::nullopt;
            }
            gone.insert(key_of(i));
        }
        Value out = without(v, gone, op);
        add_local(StepKind::Compute, out, c.function, c.function + " over the local shard",
                  steps.size() == steps_at_elems ? elems : local_elements(v), local_bytes(v));
        compute(OpKind::Reduce, v.id, out).reduce = reduce_fn_of(c.function);
        return out;
    }
    case ast::FunctionKind::Softmax: {
        std::vector<int> reduce;
        for (int k = 0; k < axes; ++k)
            if (v.partial.has(k)) reduce.push_back(k);
        if (!reduce.empty()) complete(v, reduce, e.range, "softmax needs a complete input");
        if (c.indices.size() != 1 || !v.has(key_of(c.indices[0]))) {
            error(Code::S122, e.range,
                  "softmax needs one index of its argument to normalise over, as in "
                  "softmax_v(z)");
            return std::nullopt;
        }
        const auto along = key_of(c.indices[0]);
        // Sharded over axes of size 1 only, every device holds whole rows: nothing to fix.
        auto split_over = [&](const AxisList& ks) {
            std::int64_t n = 1;
            for (int k : ks)
                n *= ctx_.axis_size(k);
            return n;
        };
        if (auto it = v.sharding.find(along);
            it != v.sharding.end() && split_over(it->second) > 1) {
            fixed_up = true;
            // The third kind of fix moves the axis to another index, whole rows then local:
            // an all-to-all onto each dimension of one unsharded index (sharded along one
            // axis only). One choice each.
            SmallVec<IndexKey, 8> onto;
            if (it->second.size() == 1)
                for (const auto& d : v.dims)
                    if (d.parts.size() == 1 && !(d.parts.front() == along) &&
                        !v.sharding.count(d.parts.front()))
                        onto.push_back(d.parts.front());
            const int choice = choose(2 + static_cast<int>(onto.size()), false);
            if (choice >= 2) {
                const int k = it->second.front();
                group_collective_of(v, StepKind::AllToAll, std::span<const int>(&k, 1), along,
                                    onto[static_cast<std::size_t>(choice - 2)],
                                    "softmax along sharded " + along.text() + " needs whole rows");
            } else if (choice == 0) {
                // Two small all-reduces of the row statistics per axis: every maximum first,
                // then every sum (the softmax step runs them in that order).
                Value stats = v;
                stats.dims.erase(std::remove_if(stats.dims.begin(), stats.dims.end(),
                                                [&](const Dim& d) {
                                                    return std::find(d.parts.begin(), d.parts.end(),
                                                                     along) != d.parts.end();
                                                }),
                                 stats.dims.end());
                const double stats_bytes = local_bytes(stats);
                for (const char* stat : {"max", "sum"})
                    for (int k : AxisList(it->second)) {
                        if (ctx_.axis_size(k) == 1) continue; // nothing to combine
                        stats.name = v.name + "." + stat;
                        add_collective(StepKind::AllReduce, k, stats, stats_bytes, stats_bytes,
                                       std::string("all-reduce the row ") +
                                           (stat[0] == 'm' ? "maximum" : "sum") + " of " + v.name +
                                           " over " + ctx_.axis_label(k) +
                                           ": softmax along sharded " + along.text());
                        steps.back().inputs = {v.id}; // performed by the softmax step
                        steps.back().reduce = stat[0] == 'm' ? ReduceFn::Max : ReduceFn::Sum;
                    }
            } else {
                all_gather(v, AxisList(it->second).front(),
                           "softmax along sharded " + along.text());
            }
            not_as_written(Code::S213, e.range,
                           "softmax along " + along.text() +
                               ", which is sharded, needs communication",
                           "all-gather " + along.text() + " first, explicitly", false);
        }
        return finish("softmax_" + along.text(), OpKind::Softmax);
    }
    case ast::FunctionKind::Collective:
        return explicit_collective(c, std::move(v), e);
    }
    return std::nullopt;
}

} // namespace shardscope::semantics::detail
