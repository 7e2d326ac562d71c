// The left-hand side: NOTATION.md section 6, the from -> to table. The left-hand side says
// which placement the result must have; per mesh axis the computed placement is moved there:
// R -> S slices locally, S -> R all-gathers, S(d) -> S(e) is an all-to-all, P -> R an
// all-reduce, P -> S a reduce-scatter, R -> P keeps one copy; S -> P and P(sum) -> P(max) are
// errors (S200, S201). `transition` finds the cheapest exact sequence (redistribute.hpp).
// Indices absent from the left are summed away; every left index must come from the right
// (S130); `+=` adds into the tensor as stored (S104, S105, S203).
#include "internal.hpp"

#include "semantics/redistribute.hpp"

namespace shardscope::semantics::detail {

void Evaluator::transition(Value& have, const Value& want, const ast::SourceRange& at,
                           std::string_view reason) {
    const int axes = static_cast<int>(ctx_.mesh.axes.size());
    // What no movement of blocks can produce.
    for (int k = 0; k < axes; ++k) {
        // The placements are built (with their words) only where one of the checks fails.
        const bool fp = have.partial.has(k);
        const bool tp = want.partial.has(k);
        const IndexKey* fs = fp ? nullptr : have.sharded_index(k);
        const IndexKey* ts = tp ? nullptr : want.sharded_index(k);
        const bool fails = (fp && tp && have.partial.at(k) != want.partial.at(k)) ||
                           (ts && !have.has(*ts)) || (fs && tp);
        if (!fails) continue;
        const auto from = have.placement(k);
        const auto to = want.placement(k);
        if (from.kind == Kind::Partial && to.kind == Kind::Partial && from.reduce != to.reduce) {
            error(Code::S201, at,
                  from.text() + " cannot become " + to.text() + " on " + ctx_.axis_label(k),
                  "reduce it first (all-reduce), then take the " +
                      std::string(partial_op_name(to.reduce)));
            return;
        }
        if (to.kind == Kind::Shard && !have.has(to.index)) {
            error(Code::S202, at,
                  (from.kind == Kind::Partial ? "cannot reduce-scatter onto "
                                              : "cannot move the sharding onto ") +
                      to.index.text() + ": the value has no such index");
            return;
        }
        if (from.kind == Kind::Shard && to.kind == Kind::Partial) {
            error(Code::S200, at,
                  "a tensor sharded on " + ctx_.axis_label(k) + " (along " + from.index.text() +
                      ") cannot become partial (S -> P)",
                  "drop the {U_" + ctx_.axis_name(k) +
                      "} marker, or shard the left-hand side along " + from.index.text());
            return;
        }
    }
    // Nothing to move (the same sharding and partials give the same states below): the
    // common case of a use or left-hand side that asks for what it has.
    if (have.sharding == want.sharding && have.partial == want.partial) return;
    // One partial axis completed and nothing else changed (a contraction's P(sum) to the
    // left-hand side's R): the planner's axis-by-axis plan is that one all-reduce, which it
    // takes without a search (redistribute.cpp), so the problem is not built for it.
    if (have.sharding == want.sharding) {
        int only = -1;
        bool other = false;
        for (int k = 0; k < axes && !other; ++k) {
            const bool hp = have.partial.has(k), wp = want.partial.has(k);
            if (hp && !wp && only < 0)
                only = k;
            else if (hp != wp || (hp && have.partial.at(k) != want.partial.at(k)))
                other = true;
        }
        if (!other && only >= 0 && !want.sharded_index(only)) {
            all_reduce(have, only, reason);
            return;
        }
    }
    // The problem in the search's terms: atoms in storage order, axes and partials.
    std::vector<IndexKey> atoms;
    std::size_t atom_count = 0;
    for (const auto& d : have.dims)
        atom_count += d.parts.size();
    atoms.reserve(atom_count);
    for (const auto& d : have.dims)
        atoms.insert(atoms.end(), d.parts.begin(), d.parts.end());
    RedistributionProblem p;
    p.axis_sizes.reserve(static_cast<std::size_t>(axes));
    for (const auto& a : ctx_.mesh.axes)
        p.axis_sizes.push_back(a.size);
    p.devices = ctx_.mesh.devices;
    p.elem_bytes = have.elem_bytes;
    p.extents.reserve(atom_count);
    for (const auto& i : atoms)
        p.extents.push_back(ctx_.range(i));
    auto state_of = [&](const Value& v) {
        LayoutState s;
        s.axes.reserve(atom_count);
        for (const auto& i : atoms) {
            auto it = v.sharding.find(i);
            s.axes.push_back(it == v.sharding.end() ? std::vector<int>{} : it->second.to_vector());
        }
        s.partial.assign(static_cast<std::size_t>(axes), std::nullopt);
        for (const auto& [k, op] : v.partial)
            s.partial[static_cast<std::size_t>(k)] = op;
        return s;
    };
    const LayoutState from = state_of(have);
    const LayoutState to = state_of(want);
    if (from == to) return;
    // The links are lent to the problem, not copied (the moves below read them again).
    p.links = std::move(ctx_.links);
    struct GiveBack {
        std::vector<Link>& to;
        std::vector<Link>& from;
        ~GiveBack() { to = std::move(from); }
    };
    std::optional<std::vector<Move>> moves;
    {
        const GiveBack give_back{ctx_.links, p.links};
        moves = plan_redistribution(p, from, to);
    }
    if (!moves) {
        error(Code::S204, at,
              "no exact redistribution takes " + have.name + " to the placement written here",
              "redistribute in steps, as a chain");
        return;
    }
    // A reduce-scatter onto an index the target does not shard there, gathered back later:
    // the two halves of a hierarchical all-reduce, said so in their reasons.
    auto hierarchical = [&](const Move& m) {
        if (m.kind != MoveKind::ReduceScatter && m.kind != MoveKind::AllGather) return false;
        const int a = m.kind == MoveKind::ReduceScatter ? m.to : m.from;
        const auto& kept = to.axes[static_cast<std::size_t>(a)];
        return from.partial[static_cast<std::size_t>(m.axes.front())] &&
               std::find(kept.begin(), kept.end(), m.axes.front()) == kept.end();
    };
    for (const auto& move : *moves) {
        const Move& m = move;
        const std::string why =
            hierarchical(m)
                ? cat(reason, " (",
                      m.kind == MoveKind::ReduceScatter ? "scattered" : "gathered back",
                      ": a hierarchical all-reduce, the rest reduced on the part between)")
                : std::string(reason);
        const int k = m.axes.empty() ? -1 : m.axes.front();
        if (m.kind == MoveKind::AllReduce || m.kind == MoveKind::ReduceScatter ||
            m.kind == MoveKind::AllGather || m.kind == MoveKind::AllToAll) {
            const auto i = m.from >= 0 ? atoms[static_cast<std::size_t>(m.from)] : IndexKey();
            const auto j = m.to >= 0 ? atoms[static_cast<std::size_t>(m.to)] : IndexKey();
            const StepKind kind = m.kind == MoveKind::AllReduce       ? StepKind::AllReduce
                                  : m.kind == MoveKind::ReduceScatter ? StepKind::ReduceScatter
                                  : m.kind == MoveKind::AllGather     ? StepKind::AllGather
                                                                      : StepKind::AllToAll;
            group_collective_of(have, kind, m.axes, i, j, why);
            continue;
        }
        switch (m.kind) {
        case MoveKind::AllReduce:
        case MoveKind::ReduceScatter:
        case MoveKind::AllGather:
        case MoveKind::AllToAll:
            break; // collectives: above
        case MoveKind::Slice:
            slice(have, k, atoms[static_cast<std::size_t>(m.to)], why);
            break;
        case MoveKind::KeepOne: {
            const int in = have.id;
            have.partial.set(k, m.op);
            add_local(StepKind::Compute, have, "keep one copy",
                      "R -> P on " + ctx_.axis_label(k) +
                          ": keep one device's copy, zero the others (local)");
            compute(OpKind::KeepOne, in, have).mesh_axes = {k};
            break;
        }
        case MoveKind::Permute: {
            FlatMap<IndexKey, AxisList> sharding;
            const LayoutState& after = m.target.partial.empty() ? to : m.target;
            for (std::size_t a = 0; a < atoms.size(); ++a)
                if (!after.axes[a].empty())
                    for (int ax : after.axes[a])
                        sharding[atoms[a]].push_back(ax);
            permute(have, sharding, m.pairs, m.permute_axes, m.bytes, {m.time_s, m.protocol}, why);
            break;
        }
        }
    }
}

void Evaluator::reduce_leftovers(Value& v, const IndexSet& keep, const ast::SourceRange& at) {
    IndexSet gone; // a value's indices are distinct: no set of them first
    for (const auto& d : v.dims)
        for (const auto& i : d.parts)
            if (!keep.count(i)) gone.insert(i);
    if (gone.empty()) return;
    // A sum over a partial max is no partial max: reduce it first.
    const int axes = static_cast<int>(ctx_.mesh.axes.size());
    for (int k = 0; k < axes; ++k)
        if (v.partial.is(k, PartialOp::Max))
            partial_max_needs_reduction(v, k, at, "a sum over the indices absent from the left");
    const double elems = local_elements(v);
    const double bytes = local_bytes(v);
    std::string names;
    Value out = without(v, gone, PartialOp::Sum);
    for (const auto& i : gone)
        names += (names.empty() ? "" : " ") + i.text();
    const int in = v.id;
    v = std::move(out);
    add_local(StepKind::Compute, v, "sum " + names,
              "sum over " + names + " (absent from the left-hand side)", elems, bytes);
    compute(OpKind::Reduce, in, v).reduce = ReduceFn::Sum;
}

std::optional<Value> Evaluator::equation(const ast::Equation& eq, const ast::SourceRange& at) {
    const Value* lhs = written(eq.lhs);
    if (!lhs) return std::nullopt;
    IndexSet outside = lhs->indices();
    lhs_indices_ = &outside; // for fsdp_use, while the right-hand side is evaluated
    // `+=` reads the stored layout, not the left-hand side's: it is left as written.
    if (!lhs->sharding.empty() && eq.op != ast::AssignOp::Accumulate)
        plan_early_slices(eq.rhs, *lhs);
    auto rhs = eval(eq.rhs, outside);
    lhs_indices_ = nullptr;
    early_slices_.clear();
    if (!rhs) return std::nullopt;
    for (const auto& i : outside)
        if (!rhs->has(i)) {
            error(Code::S130, eq.lhs.range,
                  "index " + i.text() + " of " + lhs->name +
                      " does not appear on the right-hand side",
                  "every index on the left must come from the right (broadcasting a new index "
                  "is not supported)");
            return std::nullopt;
        }
    reduce_leftovers(*rhs, outside, eq.rhs.range);
    // `+=` adds into the tensor as an earlier statement stored it: the right-hand side is
    // brought to that layout. A left-hand side without mesh subscripts inherits it; one that
    // writes another placement is refused (exec could not add the two).
    if (eq.op == ast::AssignOp::Accumulate)
        if (auto it = defined_.find(lhs->name); it != defined_.end()) {
            auto stored = stored_layout(eq.lhs, *lhs, it->second);
            if (!stored) return std::nullopt;
            transition(*rhs, *stored, at, "+= adds into " + lhs->name + " as it is stored");
            if (failed) return std::nullopt;
            result_id = rhs->id;
            return stored;
        }
    // The left-hand side states the result's placement.
    transition(*rhs, *lhs, at, "the left-hand side asks for it");
    result_id = rhs->id;
    // The search's other runs are read for their steps and success alone (plan_statement
    // evaluates the plan it keeps on a reporting run): no copy of the result for them.
    if (!report_) return Value{};
    return *lhs;
}

bool Evaluator::same_extents(const ast::TensorRef& r, const Value& v, const Value& def,
                             const char* how) {
    for (std::size_t d = 0; d < def.dims.size() && d < v.dims.size(); ++d) {
        const auto was = global_extent(def.dims[d]), now = global_extent(v.dims[d]);
        if (was == now) continue;
        error(Code::S105, r.range,
              "dimension " + std::to_string(d) + " of " + v.name + " was defined as " +
                  def.dims[d].text + " (" + std::to_string(was) + ") and is " + how + " as " +
                  v.dims[d].text + " (" + std::to_string(now) + ")",
              "use indices with the ranges of the definition (by position), or define a new "
              "tensor");
        return false;
    }
    return true;
}

std::optional<Value> Evaluator::stored_layout(const ast::TensorRef& r, const Value& lhs,
                                              const Value& def) {
    if (def.dims.size() != lhs.dims.size()) {
        error(Code::S104, r.range,
              "tensor " + lhs.name + " was defined with " + std::to_string(def.dims.size()) +
                  " dimensions and '+=' adds " + std::to_string(lhs.dims.size()) + " to it",
              "write the left-hand side with the dimensions of its definition");
        return std::nullopt;
    }
    if (!same_extents(r, lhs, def, "accumulated into")) return std::nullopt;
    // The definition's layout, in this left-hand side's index names (by position).
    Value stored = lhs;
    stored.sharding.clear();
    stored.partial = def.partial;
    for (std::size_t d = 0; d < def.dims.size(); ++d) {
        const auto& dp = def.dims[d].parts;
        const auto& up = lhs.dims[d].parts;
        if (dp.size() != up.size()) {
            error(Code::S104, r.range,
                  "dimension " + std::to_string(d) + " of " + lhs.name + " was defined as " +
                      def.dims[d].text + " and '+=' writes it as " + lhs.dims[d].text,
                  "write the left-hand side with the dimensions of its definition");
            return std::nullopt;
        }
        for (std::size_t p = 0; p < dp.size(); ++p)
            if (auto s = def.sharding.find(dp[p]); s != def.sharding.end())
                stored.sharding[up[p]] = s->second;
    }
    if (writes_placement(r) && (stored.sharding != lhs.sharding || stored.partial != lhs.partial)) {
        const auto have = layout(stored).placements;
        std::string text;
        for (const auto& pl : have)
            text += (text.empty() ? "" : ", ") + pl.text();
        error(Code::S203, r.range,
              "'+=' adds into " + lhs.name + " as an earlier statement stored it (" + text +
                  "), but the left-hand side writes another placement",
              "write " + lhs.name +
                  " without mesh subscripts to add into it as stored, or "
                  "redistribute it in a statement of its own first (" +
                  lhs.name + " -> ...)");
        return std::nullopt;
    }
    return stored;
}

} // namespace shardscope::semantics::detail
