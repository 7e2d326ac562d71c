// The evaluator's machinery: diagnostics, choice points, shapes and layouts, the data flow,
// steps and the collectives every rule makes (NOTATION.md sections 6 and 8). The rules
// themselves (rules 1-4, functions, explicit collectives, `+ - /`, the left-hand side, uses
// across statements, chains) are in semantics/rules/, one file per family: the Evaluator is
// one class whose members are defined across those files.
#include "evaluator.hpp"

#include "redistribute.hpp"
#include "rules/internal.hpp"

#include "parser/visit.hpp"

#include <algorithm>

namespace shardscope::semantics::detail {

void Evaluator::error(Code code, const ast::SourceRange& r, std::string msg, std::string fix) {
    failed = true;
    if (report_) ctx_.diag(Severity::Error, code, r, std::move(msg), std::move(fix));
}

void Evaluator::warning(Code code, const ast::SourceRange& r, std::string msg, std::string fix) {
    if (report_) ctx_.diag(Severity::Warning, code, r, std::move(msg), std::move(fix));
}

void Evaluator::note(Code code, const ast::SourceRange& r, std::string msg, std::string fix) {
    if (report_) ctx_.diag(Severity::Note, code, r, std::move(msg), std::move(fix));
}

void Evaluator::not_as_written(Code code, const ast::SourceRange& at, const std::string& msg,
                               std::string fix, bool note_otherwise) {
    if (ctx_.strict)
        error(code, at, msg + " (--strict)", std::move(fix));
    else if (note_otherwise)
        note(code, at, msg);
}

int Evaluator::choose(int options, bool alternative) {
    const std::size_t at = points.size();
    points.push_back({options, alternative});
    const int c = at < fixed_.size() ? fixed_[at] : 0;
    return std::clamp(c, 0, options - 1);
}

std::int64_t Evaluator::global_extent(const Dim& d) const {
    std::int64_t n = 1;
    for (const auto& p : d.parts)
        n = sat_mul(n, ctx_.range(p));
    return n;
}

// Inline, before its one caller: it runs for every index of every value sized (each product
// sizes its operands and result), and the call cost a fifth of it.
inline std::int64_t Evaluator::split_count(const Value& v, IndexKey i) const {
    // The sharding holds an entry or two: a scan compares fewer keys than a binary search.
    for (const auto& [j, axes] : v.sharding)
        if (j == i) {
            std::int64_t n = 1;
            for (int k : axes)
                n *= ctx_.axis_size(k);
            return n;
        }
    return 1;
}

// Inline, before local_elements: every value sized goes through it once per dimension.
inline std::int64_t Evaluator::local_extent(const Value& v, const Dim& d) const {
    // A dimension of one index (most): its extent without a loop (the saturating product of
    // one factor is the factor).
    if (d.parts.size() == 1) {
        const IndexKey p = d.parts.front();
        const auto r = ctx_.range(p);
        return v.sharding.empty() ? r : ceil_div(r, split_count(v, p));
    }
    std::int64_t n = 1;
    if (v.sharding.empty()) {
        for (const auto& p : d.parts)
            n = sat_mul(n, ctx_.range(p));
        return n;
    }
    for (const auto& p : d.parts)
        n = sat_mul(n, ceil_div(ctx_.range(p), split_count(v, p)));
    return n;
}

double Evaluator::local_elements(const Value& v) const {
    double n = 1;
    for (const auto& d : v.dims)
        n *= static_cast<double>(local_extent(v, d));
    return n;
}

TensorLayout Evaluator::layout(const Value& v) const {
    TensorLayout t;
    layout_into(v, t);
    return t;
}

void Evaluator::layout_into(const Value& v, TensorLayout& t) const {
    t.tensor = v.name;
    const auto dims = v.dims.size();
    t.indices.reserve(dims);
    t.global_shape.reserve(dims);
    t.local_shape.reserve(dims);
    std::size_t atoms = 0;
    for (const auto& d : v.dims)
        atoms += d.parts.size();
    t.atoms.reserve(atoms);
    // One pass over the atoms gives both shapes and the atoms (global_extent and
    // local_extent, without looking each index up twice).
    for (std::size_t d = 0; d < dims; ++d) {
        const auto& dim = v.dims[d];
        t.indices.push_back(dim.text);
        std::int64_t global = 1, local = 1;
        for (const auto& p : dim.parts) {
            auto& a = t.atoms.emplace_back();
            p.assign_to(a.index);
            a.extent = ctx_.range(p);
            a.dim = static_cast<int>(d);
            std::int64_t split = 1;
            if (auto it = v.sharding.find(p); it != v.sharding.end()) {
                a.axes.assign(it->second.begin(), it->second.end());
                for (int k : it->second)
                    split *= ctx_.axis_size(k);
            }
            global = sat_mul(global, a.extent);
            local = sat_mul(local, ceil_div(a.extent, split));
        }
        t.global_shape.push_back(global);
        t.local_shape.push_back(local);
    }
    // Value::placement of every axis, in one pass over the sharding and the partial axes
    // instead of a search of both per axis: an axis goes to the first index (in the
    // sharding's order) that lists it, and a partial axis is partial whatever shards it.
    const auto axes = static_cast<int>(ctx_.mesh.axes.size());
    t.placements.resize(static_cast<std::size_t>(axes));
    for (const auto& [i, ks] : v.sharding) {
        int dim = -2; // looked up once, when the index claims an axis
        for (int k : ks) {
            if (k < 0 || k >= axes) continue;
            auto& p = t.placements[static_cast<std::size_t>(k)];
            if (p.kind == Kind::Shard) continue; // an earlier index has it
            if (dim == -2) dim = v.dim_of(i);
            p.kind = Kind::Shard;
            i.assign_to(p.index);
            p.dim = dim;
        }
    }
    for (const auto& [k, op] : v.partial) {
        if (k < 0 || k >= axes) continue;
        auto& p = t.placements[static_cast<std::size_t>(k)];
        p = Placement{};
        p.kind = Kind::Partial;
        p.reduce = op;
    }
}

int Evaluator::new_value(const Value& v, std::string load, std::string constant) {
    if (report_) {
        auto& info = values.emplace_back(); // built in place: a layout is large
        layout_into(v, info.layout);
        info.load = std::move(load);
        info.constant = std::move(constant);
    }
    return value_count_++;
}

void Evaluator::flow(int in, Value& v) {
    auto& s = steps.back();
    if (report_) s.inputs = {in}; // the data flow serves only the reported plan
    v.id = new_value(v);
    s.output = v.id;
}

Step& Evaluator::compute(OpKind op, const std::vector<Value>& ins, Value& out) {
    auto& s = steps.back();
    s.op = op;
    // The data flow serves only the reported plan; the ids go straight into the step's
    // inline list (a list of them built first cost a heap block per product).
    if (report_) {
        s.inputs.clear();
        for (const auto& v : ins)
            s.inputs.push_back(v.id);
    }
    out.id = new_value(out);
    s.output = out.id;
    return s;
}

Step& Evaluator::compute(OpKind op, int in, Value& out) {
    auto& s = steps.back();
    s.op = op;
    if (report_) s.inputs = {in}; // the data flow serves only the reported plan
    out.id = new_value(out);
    s.output = out.id;
    return s;
}

void Evaluator::record_operand(const Value& v) {
    if (report_) operands.push_back(values[static_cast<std::size_t>(v.id)].layout);
}

void Evaluator::add_collective(StepKind kind, int k, const Value& v, double group_bytes,
                               double local, std::string reason) {
    add_collective(kind, std::span<const int>(&k, 1), v, group_bytes, local, std::move(reason));
}

void Evaluator::add_collective(StepKind kind, std::span<const int> ks, const Value& v,
                               double group_bytes, double local, std::string reason) {
    Step& s = steps.emplace_back(); // built in place: a Step is large
    s.kind = kind;
    s.mesh_axes.assign(ks.begin(), ks.end());
    s.tensor = v.name;
    s.cost.elem_bytes = v.elem_bytes;
    std::int64_t n = 1;
    for (int k : ks)
        n *= ctx_.axis_size(k);
    if (n == 1) {
        // Over a single device nothing moves: the placement is relabelled locally.
        s.kind = StepKind::Slice;
        s.text.reason = std::string(step_kind_name(kind)) + " over " + axes_label(ks) +
                        ", which has size 1: nothing moves (" + reason + ")";
        return;
    }
    const auto priced = price_collective(ctx_.links, kind, ks, n, group_bytes, local);
    s.cost.bytes_per_device = priced.bytes;
    s.cost.time_s = priced.timing.time_s;
    s.cost.protocol = priced.timing.protocol;
    s.text.reason = std::move(reason);
}

std::string Evaluator::axes_label(std::span<const int> ks) const {
    if (ks.size() == 1) return ctx_.axis_label(ks.front());
    std::string names;
    std::int64_t n = 1;
    for (int k : ks) {
        names += (names.empty() ? "" : ",") + ctx_.axis_name(k);
        n *= ctx_.axis_size(k);
    }
    return "axes " + names + " (one group of " + std::to_string(n) + " devices)";
}

void Evaluator::complete(Value& v, const std::vector<int>& ks, const ast::SourceRange& at,
                         const std::string& why) {
    if (ks.size() == 1) all_reduce(v, ks.front(), why);
    if (ks.size() <= 1) return;
    // Several partial axes: the planner chooses one all-reduce per axis, one over the group,
    // or the hierarchical one (scatter, reduce the rest, gather).
    Value want = v;
    for (int k : ks)
        want.partial.erase(k);
    transition(v, want, at, why);
}

void Evaluator::group_collective(Value& v, StepKind kind, const std::vector<int>& ks,
                                 const IndexId* from, const IndexId* to, const std::string& why) {
    group_collective_of(v, kind, ks, from ? IndexKey(*from) : IndexKey(),
                        to ? IndexKey(*to) : IndexKey(), why);
}

void Evaluator::group_collective_of(Value& v, StepKind kind, std::span<const int> ks, IndexKey from,
                                    IndexKey to, std::string_view why) {
    const int in = v.id;
    const double local = local_bytes(v);
    std::int64_t n = 1;
    for (int k : ks)
        n *= ctx_.axis_size(k);
    // One axis (most collectives): its label as the context keeps it, not a copy.
    std::string group_label;
    std::string_view label;
    if (ks.size() == 1 && static_cast<std::size_t>(ks.front()) < ctx_.axis_labels_.size()) {
        label = ctx_.axis_labels_[static_cast<std::size_t>(ks.front())];
    } else {
        group_label = axes_label(ks);
        label = group_label;
    }
    switch (kind) {
    case StepKind::AllReduce:
        add_collective(kind, ks, v, local, local,
                       cat("all-reduce ", v.name, " over ", label, " (",
                           partial_op_name(v.partial.at(ks.front())), "): ", why));
        for (int k : ks)
            v.partial.erase(k);
        break;
    case StepKind::ReduceScatter:
        add_collective(
            kind, ks, v, local, local,
            cat("reduce-scatter ", v.name, " over ", label, " onto ", text_of(to), ": ", why));
        to.assign_to(steps.back().to_index);
        for (int k : ks) {
            v.partial.erase(k);
            v.sharding[to].push_back(k);
        }
        break;
    case StepKind::AllGather:
        add_collective(
            kind, ks, v, local * static_cast<double>(n), local,
            cat("all-gather ", v.name, " over ", label, " (unshard ", text_of(from), "): ", why));
        from.assign_to(steps.back().from_index);
        for (int k : ks)
            v.unshard(k);
        break;
    default:
        add_collective(StepKind::AllToAll, ks, v, local, local,
                       cat("all-to-all ", v.name, " over ", label, " (", text_of(from), " -> ",
                           text_of(to), "): ", why));
        from.assign_to(steps.back().from_index);
        to.assign_to(steps.back().to_index);
        for (int k : ks) {
            v.unshard(k);
            v.sharding[to].push_back(k);
        }
        break;
    }
    flow(in, v);
}

void Evaluator::add_local(StepKind kind, const Value& v, std::string detail, std::string reason,
                          double flops, double bytes_moved, bool matrix) {
    Step& s = steps.emplace_back(); // built in place: a Step is large
    s.kind = kind;
    s.tensor = v.name;
    s.text.detail = std::move(detail);
    s.cost.flops_per_device = flops;
    s.text.reason = std::move(reason);
    if (kind == StepKind::Compute)
        s.cost.time_s = compute_time(flops, bytes_moved, *ctx_.hw, v.elem_bytes, matrix);
}

void Evaluator::all_reduce(Value& v, int k, std::string_view why) {
    group_collective_of(v, StepKind::AllReduce, std::span<const int>(&k, 1), {}, {}, why);
}

void Evaluator::reduce_scatter(Value& v, int k, IndexKey i, std::string_view why) {
    group_collective_of(v, StepKind::ReduceScatter, std::span<const int>(&k, 1), {}, i, why);
}

void Evaluator::all_gather(Value& v, int k, std::string_view why) {
    auto i = v.sharded_on(k);
    if (!i) return;
    auto axes = v.sharding[*i];
    const auto pos = std::find(axes.begin(), axes.end(), k) - axes.begin();
    for (auto a = static_cast<std::ptrdiff_t>(axes.size()) - 1; a >= pos; --a)
        group_collective_of(v, StepKind::AllGather,
                            std::span<const int>(&axes[static_cast<std::size_t>(a)], 1), *i, {},
                            why);
}

std::string messages_text(const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs) {
    // Up to eight pairs by name; a larger exchange by its count (JSON lists every pair).
    std::string moves;
    for (std::size_t i = 0; i < pairs.size() && i < 8; ++i)
        moves += (i ? ", " : "") + std::to_string(pairs[i].first) + "->" +
                 std::to_string(pairs[i].second);
    if (pairs.size() > 8) moves += ", ... (" + std::to_string(pairs.size()) + " messages)";
    return moves;
}

void Evaluator::permute(Value& v, const FlatMap<IndexKey, AxisList>& sharding,
                        const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs,
                        const std::vector<int>& axes, double bytes, CollectiveTime timing,
                        const std::string& why) {
    const int in = v.id;
    Step s;
    s.tensor = v.name;
    s.cost.elem_bytes = v.elem_bytes;
    s.pairs = pairs;
    if (pairs.empty()) {
        s.kind = StepKind::Slice;
        s.text.reason = "keep " + v.name +
                        "'s blocks where they are (each device's new block is "
                        "part of its own): " +
                        why;
    } else {
        s.kind = StepKind::Permute;
        s.mesh_axes = axes;
        s.cost.bytes_per_device = bytes;
        s.cost.time_s = timing.time_s;
        s.cost.protocol = timing.protocol;
        s.text.reason = "permute " + v.name + " (device " + messages_text(pairs) + "): " + why;
    }
    steps.push_back(std::move(s));
    v.sharding = sharding;
    flow(in, v);
}

void Evaluator::slice(Value& v, int k, IndexKey i, const std::string& why) {
    const int in = v.id;
    v.sharding[i].push_back(k);
    // A local step's words serve only the reported plan (the search reads collectives').
    add_local(StepKind::Slice, v, {},
              report_ ? cat("slice ", v.name, " locally along ", i.text(), " over ",
                            ctx_.axis_label(k), ": ", why)
                      : std::string());
    i.assign_to(steps.back().to_index);
    flow(in, v);
}

void Evaluator::collect(const ast::Expr& e, IndexSet& out) {
    ast::for_each_index(e, [&](const ast::Index& i) { out.insert(key_of(i)); });
}

std::optional<Value> Evaluator::eval(const ast::Expr& e, const IndexSet& outside) {
    if (failed) return std::nullopt;
    return std::visit([&](const auto& n) { return eval_node(n, e, outside); }, e.node);
}

std::optional<Value> Evaluator::eval_shared(const ast::Expr& e, const IndexSet& outside) {
    if (failed) return std::nullopt;
    auto visit = [&] {
        return std::visit([&](const auto& n) { return eval_node(n, e, outside); }, e.node);
    };
    // Leaves are as cheap to evaluate as to replay; past a choice point runs differ.
    if (std::holds_alternative<ast::TensorRef>(e.node) ||
        std::holds_alternative<ast::Number>(e.node) || !points.empty())
        return visit();
    // A run that gathers (FSDP) evaluates every expression holding an occurrence otherwise.
    if (!report_ && ctx_.prefix_steps && !gather_contracted)
        for (std::size_t at = 0; at < ctx_.prefix_memo_used; ++at)
            if (const auto& m = ctx_.prefix_memo[at];
                m.expr == &e && m.steps_begin == steps.size() && m.temps_before == temps_ &&
                m.values_before == value_count_ && m.fixed_up_before == fixed_up &&
                m.outside == outside && m.steps_end <= ctx_.prefix_steps->size()) {
                // This run is not reported: the planner reads its steps' costs and its
                // collectives only, so a local step comes back without its words and data flow.
                const auto first = ctx_.prefix_steps->begin();
                for (auto it = first + static_cast<std::ptrdiff_t>(m.steps_begin);
                     it != first + static_cast<std::ptrdiff_t>(m.steps_end); ++it) {
                    if (is_collective(it->kind)) {
                        steps.push_back(*it);
                        continue;
                    }
                    auto& s = steps.emplace_back();
                    s.kind = it->kind;
                    s.op = it->op;
                    s.output = it->output;
                    s.cost = it->cost;
                }
                temps_ = m.temps_after;
                value_count_ = m.values_after;
                fixed_up = m.fixed_up_after;
                return *m.result;
            }
    if (!report_ || !ctx_.prefix_memo_filling) return visit();
    const std::size_t steps_begin = steps.size();
    const int temps_before = temps_, values_before = value_count_;
    const bool fixed_up_before = fixed_up;
    auto v = visit();
    if (!v || failed || !points.empty()) return v;
    // Recorded after the operands it holds (they record first), in a spare entry of the
    // context when there is one: its result keeps its blocks from an earlier statement.
    if (ctx_.prefix_memo_used == ctx_.prefix_memo.size()) ctx_.prefix_memo.emplace_back();
    auto& m = ctx_.prefix_memo[ctx_.prefix_memo_used++];
    m.steps_begin = steps_begin;
    m.temps_before = temps_before;
    m.values_before = values_before;
    m.fixed_up_before = fixed_up_before;
    m.expr = &e;
    m.outside = outside;
    m.steps_end = steps.size();
    m.temps_after = temps_;
    m.values_after = value_count_;
    m.fixed_up_after = fixed_up;
    if (m.result)
        *m.result = *v;
    else
        m.result = std::make_unique<Value>(*v);
    return v;
}

std::optional<std::vector<Value>> Evaluator::eval_operands(const std::vector<ast::Expr>& operands,
                                                           const IndexSet& outside) {
    // A tensor or a number ignores what is needed outside it: only the other operands need
    // their siblings' indices (most products are of tensors alone).
    auto leaf = [](const ast::Expr& x) {
        return std::holds_alternative<ast::TensorRef>(x.node) ||
               std::holds_alternative<ast::Number>(x.node);
    };
    std::vector<Value> ops;
    ops.reserve(operands.size());
    // Many operands that are no leaves (a sum of thousands of products): each one's siblings'
    // indices as the union of the indices before it and after it, each union built once.
    // Collecting every sibling for every operand took time quadratic in their number.
    constexpr std::size_t kMany = 8;
    struct Unions {
        std::vector<IndexSet> after; ///< after[i]: the indices of operands i..
        IndexSet before;             ///< the indices of the operands before the current one
    };
    std::optional<Unions> many; // made only for many operands: most products have two
    if (operands.size() > kMany &&
        static_cast<std::size_t>(std::count_if(operands.begin(), operands.end(),
                                               [&](const auto& x) { return !leaf(x); })) > kMany) {
        auto& after = many.emplace().after;
        after.resize(operands.size() + 1);
        for (std::size_t i = operands.size(); i-- > 0;) {
            after[i] = after[i + 1];
            collect(operands[i], after[i]);
        }
    }
    for (std::size_t i = 0; i < operands.size(); ++i) {
        if (leaf(operands[i])) {
            auto v = eval(operands[i], outside);
            if (!v) return std::nullopt;
            ops.push_back(std::move(*v));
            if (many) collect(operands[i], many->before);
            continue;
        }
        // The siblings' indices collected straight into the set it needs (no set per
        // sibling first: most products have one operand that is no leaf).
        IndexSet out = outside;
        if (many) {
            out.insert(many->before.begin(), many->before.end());
            out.insert(many->after[i + 1].begin(), many->after[i + 1].end());
            collect(operands[i], many->before);
        } else {
            for (std::size_t j = 0; j < operands.size(); ++j)
                if (j != i) collect(operands[j], out);
        }
        auto v = eval_shared(operands[i], out);
        if (!v) return std::nullopt;
        ops.push_back(std::move(*v));
    }
    return ops;
}

std::optional<Value> Evaluator::eval_node(const ast::Number& n, const ast::Expr&, const IndexSet&) {
    Value v;
    v.name = "scalar";
    v.number = true;
    v.elem_bytes = ctx_.dtype_bytes;
    v.id = new_value(v, {}, n.text);
    return v;
}

Value Evaluator::without(const Value& v, const IndexSet& gone, PartialOp op) {
    Value out;
    out.name = temp_name();
    out.elem_bytes = v.elem_bytes;
    out.partial = v.partial;
    for (const auto& d : v.dims) {
        Dim nd;
        for (const auto& p : d.parts) {
            const auto it = v.sharding.find(p);
            if (gone.count(p)) {
                if (it != v.sharding.end())
                    for (int k : it->second)
                        out.partial.set(k, op);
            } else {
                nd.parts.push_back(p);
                if (it != v.sharding.end()) out.sharding[p] = it->second;
            }
        }
        if (!nd.parts.empty()) {
            nd.text = nd.parts.size() == 1 ? text_of(nd.parts[0]) : d.text;
            out.dims.push_back(std::move(nd));
        }
    }
    return out;
}

} // namespace shardscope::semantics::detail
