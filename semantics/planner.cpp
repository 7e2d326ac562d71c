// The search over choices (every combination, replayed), the plan of one statement, its
// alternatives, plan notes, uneven-shard warnings and chain-step expectations.
#include "planner.hpp"

#include "evaluator.hpp"
#include "redistribute.hpp"
#include "report.hpp"

#include <algorithm>

namespace shardscope::semantics::detail {

namespace {

/// A run's choices, a few inline (copied per run).
using Choices = SmallVec<int, 8>;

struct Outcome {
    Choices choices;
    Evaluator::Points points;
    /// The run's steps (moved out of its evaluator: no copy), kept for the words of an
    /// alternative, which are built only for the outcomes listed as one. Empty for the first
    /// run, whose steps its evaluator keeps.
    std::vector<Step> steps;
    double time_s = 0;
    bool ok = false;
    bool fixed_up = false;
    bool gathers_contracted = false; ///< the FSDP outcome (Evaluator::gather_contracted)
};

/// Whether two plans move the same: the same collectives (kind and axes) of the same tensors,
/// in order; tells apart plans whose collectives have the same names but act on different
/// tensors.
bool same_moves(const std::vector<Step>& a, const std::vector<Step>& b) {
    auto ia = a.begin(), ib = b.begin();
    for (;;) {
        while (ia != a.end() && !is_collective(ia->kind))
            ++ia;
        while (ib != b.end() && !is_collective(ib->kind))
            ++ib;
        if (ia == a.end() || ib == b.end()) return ia == a.end() && ib == b.end();
        if (ia->kind != ib->kind || ia->mesh_axes != ib->mesh_axes || ia->tensor != ib->tensor)
            return false;
        ++ia;
        ++ib;
    }
}

/// An alternative's words: its collectives' reasons, or "no communication".
std::string description_of(const std::vector<Step>& steps) {
    // Sized first, then appended: growing by each reason cost a block per reason.
    std::size_t size = 0;
    for (const auto& st : steps)
        if (is_collective(st.kind)) size += st.text.reason.size() + 2;
    std::string out;
    out.reserve(size);
    for (const auto& st : steps)
        if (is_collective(st.kind)) {
            if (!out.empty()) out += "; ";
            out += st.text.reason;
        }
    return out.empty() ? "no communication" : out;
}

/// FSDP's gathers (Evaluator::fsdp_use) priced from the operands as read: in each, every
/// index sharded on mesh axes that `kept` (the left-hand side) lacks, in IndexKey order (the
/// sharding's), its axes minor to major, each step's bytes from the block before it; priced
/// by price_collective, as the run's all-gather steps are. False when nothing is gathered.
/// Stops once `time` reaches `limit` (the rest would only add to it).
bool fsdp_gather_time(const Context& ctx, const std::vector<TensorLayout>& operands,
                      const Value& kept, double& time, double limit) {
    auto price = [&](int k, std::int64_t n, double local) {
        time += price_collective(ctx.links, StepKind::AllGather, std::span<const int>(&k, 1), n,
                                 local * static_cast<double>(n), local)
                    .timing.time_s;
    };
    bool any = false;
    struct Contracted {
        IndexKey key;
        std::size_t atom;
    };
    SmallVec<Contracted, 4> contracted;
    SmallVec<std::int64_t, 8> split; // the devices each atom is split over, as the gathers go
    for (const auto& op : operands) {
        if (time >= limit) break;
        contracted.clear();
        for (std::size_t a = 0; a < op.atoms.size(); ++a)
            if (!op.atoms[a].axes.empty()) {
                const IndexKey key(op.atoms[a].index);
                if (!kept.has(key)) contracted.push_back({key, a});
            }
        if (contracted.empty()) continue;
        any = true;
        const double elem_bytes = ctx.bytes_of(op.tensor);
        // One index over one axis (most): one step, from the block as read (its local shape).
        if (contracted.size() == 1 && op.atoms[contracted[0].atom].axes.size() == 1) {
            const int k = op.atoms[contracted[0].atom].axes[0];
            const std::int64_t n = ctx.axis_size(k);
            if (n == 1) continue; // over one device nothing moves (add_collective)
            double local = elem_bytes;
            for (const auto e : op.local_shape)
                local *= static_cast<double>(e);
            price(k, n, local);
            continue;
        }
        std::sort(contracted.begin(), contracted.end(),
                  [](const auto& x, const auto& y) { return x.key < y.key; });
        split.clear();
        for (const auto& atom : op.atoms) {
            std::int64_t n = 1;
            for (int k : atom.axes)
                n *= ctx.axis_size(k);
            split.push_back(n);
        }
        for (const auto& c : contracted) {
            const auto& axes = op.atoms[c.atom].axes;
            for (std::size_t keep = axes.size(); keep-- > 0;) {
                const int k = axes[keep];
                const std::int64_t n = ctx.axis_size(k);
                if (n == 1) continue;
                double local = elem_bytes; // as local_extent: each atom's ceiling
                for (std::size_t b = 0; b < op.atoms.size(); ++b)
                    local *= static_cast<double>(op.atoms[b].extent / split[b] +
                                                 (op.atoms[b].extent % split[b] != 0));
                price(k, n, local);
                split[c.atom] /= n;
            }
        }
    }
    return any;
}

/// FSDP, "gather the weights instead of all-reducing activations" (NOTATION.md section 8):
/// one more alternative to an implied equation, whose first (reporting) run `first` gave
/// `result` in `time_s`. Run only where it may be cheaper: a lower bound of its time is its
/// gathers and the first run's compute steps, which it repeats on blocks at least as large
/// (it only unshards). It has no choice points: those come of contractions over sharded
/// indices, which it gathers first.
std::optional<Outcome> fsdp_outcome(Context& ctx, const Defined& defined, const ast::Equation& eq,
                                    const ast::SourceRange& at, const Evaluator& first,
                                    const Value& result, double time_s) {
    double bound = 0;
    for (const auto& st : first.steps)
        if (st.kind == StepKind::Compute) bound += st.cost.time_s;
    if (!(bound < time_s) || !fsdp_gather_time(ctx, first.operands, result, bound, time_s) ||
        !(bound < time_s))
        return std::nullopt;
    std::vector<Diagnostic> scratch; // an unreported run reports nothing; as the search's
    auto* saved = ctx.diagnostics;
    ctx.diagnostics = &scratch;
    const Choices none{};
    Evaluator ev(ctx, defined, none, false);
    ev.gather_contracted = true;
    const bool ok = ev.equation(eq, at).has_value() && !ev.failed;
    ctx.diagnostics = saved;
    if (!ok) return std::nullopt;
    Outcome o;
    o.points = std::move(ev.points);
    o.choices.resize(o.points.size(), 0);
    o.ok = true;
    o.fixed_up = ev.fixed_up;
    for (const auto& st : ev.steps)
        o.time_s += st.cost.time_s;
    o.steps = std::move(ev.steps);
    o.gathers_contracted = true;
    return o;
}

} // namespace

bool plan_statement(Context& ctx, const Defined& defined, const ast::Statement& statement,
                    std::string source, std::string pretty, const CheckOptions& options,
                    std::vector<Diagnostic>& diagnostics, const PlanOut& out) {
    const auto* s = &statement;
    const auto* eq = std::get_if<ast::Equation>(&s->node);
    const auto* ch = std::get_if<ast::Chain>(&s->node);
    // The occurrences cached are this statement's: no other statement reads them.
    ctx.written_used = 0;
    if (!ctx.written_index.empty()) ctx.written_index.clear();
    ctx.prefix_memo_used = 0;
    ctx.prefix_steps = nullptr;
    ctx.early_slices_for = nullptr;
    // Search every combination of choices (replay with a choice vector, odometer order).
    // The first run (every choice 0) reports into its own list: when it turns out to be
    // the plan, which it is for any statement without choices, it is not run again.
    std::vector<Outcome> outcomes;
    outcomes.reserve(4); // most statements have one choice point or none: one block
    Choices choices;
    std::optional<Evaluator> first_ev;
    std::optional<Value> first_result;
    std::vector<std::vector<std::string>> first_chain_cols;
    std::vector<Diagnostic> first_diags;
    for (int run = 0; run < kMaxPlans; ++run) {
        std::vector<Diagnostic> scratch;
        auto* saved = ctx.diagnostics;
        ctx.diagnostics = &scratch;
        Evaluator ev(ctx, defined, choices, run == 0);
        ctx.prefix_memo_filling = run == 0;
        std::vector<std::vector<std::string>> chain_cols;
        std::optional<Value> result =
            eq ? ev.equation(*eq, s->range) : ev.chain(*ch, s->range, chain_cols);
        ctx.diagnostics = saved;
        ctx.prefix_memo_filling = false;
        Outcome o;
        o.points = std::move(ev.points); // the reporting run needs none of them
        o.choices = choices;
        o.choices.resize(o.points.size(), 0);
        o.ok = result.has_value() && !ev.failed;
        o.fixed_up = ev.fixed_up;
        for (const auto& st : ev.steps)
            o.time_s += st.cost.time_s;
        // What moves and the words for it serve only to list alternatives: they are read
        // from the steps once the plan is chosen, for the outcomes listed.
        if (run > 0) o.steps = std::move(ev.steps);
        if (run == 0) {
            first_ev.emplace(std::move(ev));
            ctx.prefix_steps = &first_ev->steps; // what the other runs replay
            first_result = std::move(result);
            first_chain_cols = std::move(chain_cols);
            first_diags = std::move(scratch);
        }
        outcomes.push_back(std::move(o));
        const Outcome& last_outcome = outcomes.back();
        // Next combination (in place: `choices` is the last outcome's, zero-padded).
        choices = last_outcome.choices;
        int pos = static_cast<int>(choices.size()) - 1;
        while (pos >= 0 && choices[static_cast<std::size_t>(pos)] + 1 >=
                               last_outcome.points[static_cast<std::size_t>(pos)].options)
            --pos;
        if (pos < 0) break;
        choices[static_cast<std::size_t>(pos)]++;
        choices.resize(static_cast<std::size_t>(pos) + 1);
    }
    const bool implied = outcomes.front().ok && !outcomes.front().fixed_up;
    if (eq && implied && first_ev && first_result)
        if (auto fsdp = fsdp_outcome(ctx, defined, *eq, s->range, *first_ev, *first_result,
                                     outcomes.front().time_s))
            outcomes.push_back(std::move(*fsdp));
    // The plan: alternatives off, cheapest fix.
    // An implied statement (computable as written) keeps the plan its notation implies;
    // a statement that needs a fix gets the cheapest legal plan of all.
    Outcome* best = nullptr;
    // Under --strict the plan is the statement as written, errors and all.
    if (implied || ctx.strict) {
        best = &outcomes.front();
    } else {
        for (auto& o : outcomes)
            if (o.ok && (!best || o.time_s < best->time_s)) best = &o;
    }
    // Report on the best run (or the first, to explain the failure): evaluated in full.
    ctx.prefix_steps = nullptr;
    std::optional<Evaluator> final_ev;
    std::optional<Value> result;
    std::vector<std::vector<std::string>> chain_cols;
    if (!best || best == &outcomes.front()) {
        final_ev.emplace(std::move(*first_ev));
        result = std::move(first_result);
        chain_cols = std::move(first_chain_cols);
        diagnostics.insert(diagnostics.end(), std::make_move_iterator(first_diags.begin()),
                           std::make_move_iterator(first_diags.end()));
    } else {
        final_ev.emplace(ctx, defined, best->choices, true);
        final_ev->gather_contracted = best->gathers_contracted; // never, as implied ones only
        result =
            eq ? final_ev->equation(*eq, s->range) : final_ev->chain(*ch, s->range, chain_cols);
    }
    Evaluator& ev = *final_ev;
    if (!result || ev.failed) return false;
    // The first run's steps: `ev`'s when it is the reporting run (moved into the plan below),
    // else still its evaluator's.
    const bool best_is_first = best == &outcomes.front();

    StatementPlan& sp = out.plan;
    sp.range = s->range;
    sp.source = std::move(source);
    sp.pretty = std::move(pretty);
    // The reporting run replays `best`'s choices: its collectives and moves are best's.
    sp.steps = std::move(ev.steps);
    sp.operands = std::move(ev.operands);
    sp.values = std::move(ev.values);
    sp.result_value = ev.result_id;
    sp.chosen = ev.fixed_up;
    for (const auto& st : sp.steps) {
        sp.cost.time_s += st.cost.time_s;
        sp.cost.flops_per_device += st.cost.flops_per_device;
        sp.cost.comm_bytes_per_device += st.cost.bytes_per_device;
    }
    ev.layout_into(*result, sp.result);
    double memory = ev.local_bytes(*result);
    for (const auto& op : sp.operands) {
        double elems = 1;
        for (auto e : op.local_shape)
            elems *= static_cast<double>(e);
        memory += elems * ctx.bytes_of(op.tensor);
    }
    sp.cost.memory_bytes_per_device = memory;
    // Alternatives: every other legal plan, distinct by what moves (collective and tensor),
    // cheapest first.
    auto steps_of = [&](const Outcome& o) -> const std::vector<Step>& {
        if (&o != &outcomes.front()) return o.steps;
        return best_is_first ? sp.steps : first_ev->steps;
    };
    // Pointer lists, a few inline: a heap block each per statement otherwise.
    SmallVec<const Outcome*, 8> alts;
    if (outcomes.size() > 1) {
        SmallVec<const std::vector<Step>*, 8> seen{&steps_of(*best)};
        for (const auto& o : outcomes) {
            if (!o.ok) continue;
            const auto& steps = steps_of(o);
            if (std::none_of(seen.begin(), seen.end(),
                             [&](const auto* s) { return same_moves(*s, steps); })) {
                seen.push_back(&steps);
                alts.push_back(&o);
            }
        }
    }
    std::sort(alts.begin(), alts.end(), [](auto a, auto b) { return a->time_s < b->time_s; });
    for (const auto* o : alts) {
        Alternative a;
        a.collectives = collectives_of(ctx.mesh, steps_of(*o));
        a.time_s = o->time_s;
        a.description = description_of(steps_of(*o));
        sp.alternatives.push_back(std::move(a));
    }
    if (!sp.chosen && !sp.alternatives.empty() &&
        sp.alternatives.front().time_s < sp.cost.time_s * 0.999) {
        const auto& a = sp.alternatives.front();
        ctx.diag(Severity::Note, Code::S400, s->range,
                 "as written this needs " + join_or_none(collectives_of(ctx.mesh, sp)) + " (" +
                     format_seconds(sp.cost.time_s) + "); at these sizes " +
                     join_or_none(a.collectives) + " would be cheaper (" +
                     format_seconds(a.time_s) + ")",
                 a.description);
    }
    if (sp.chosen && !sp.alternatives.empty()) {
        const auto& a = sp.alternatives.front();
        ctx.diag(Severity::Note, Code::S401, s->range,
                 "not computable as written; chose " + join_or_none(collectives_of(ctx.mesh, sp)) +
                     " (" + format_seconds(sp.cost.time_s) + "), the cheapest fix; next: " +
                     join_or_none(a.collectives) + " (" + format_seconds(a.time_s) + ")");
    } else if (sp.chosen) {
        ctx.diag(Severity::Note, Code::S401, s->range,
                 "not computable as written; chose " + join_or_none(collectives_of(ctx.mesh, sp)) +
                     " (" + format_seconds(sp.cost.time_s) + ")");
    }
    // Uneven shards, once per tensor and layout (a chain's result is often its last operand).
    // Each dimension's device count comes from one pass over the placements; most layouts
    // divide evenly, and only an uneven one is compared with those already reported (a
    // layout equal to an even one is even).
    SmallVec<const TensorLayout*, 8> reported;
    SmallVec<std::int64_t, 8> split;
    auto check_even = [&](const TensorLayout& t) {
        const std::size_t dims = t.global_shape.size();
        split.clear();
        for (std::size_t d = 0; d < dims; ++d)
            split.push_back(1);
        for (std::size_t k = 0; k < t.placements.size(); ++k) {
            const auto& p = t.placements[k];
            if (p.kind == Placement::Kind::Shard && p.dim >= 0 &&
                static_cast<std::size_t>(p.dim) < dims)
                split[static_cast<std::size_t>(p.dim)] *= ctx.axis_size(static_cast<int>(k));
        }
        std::size_t d = 0;
        while (d < dims && !(split[d] > 1 && t.global_shape[d] % split[d] != 0))
            ++d;
        if (d == dims) return;
        for (const auto* c : reported)
            if (c->tensor == t.tensor && c->indices == t.indices && c->placements == t.placements &&
                c->global_shape == t.global_shape)
                return;
        reported.push_back(&t);
        ctx.diag(Severity::Warning, Code::S500, s->range,
                 t.tensor + ": dimension " + std::to_string(d) + " (" + t.indices[d] + ", " +
                     std::to_string(t.global_shape[d]) + ") does not divide by " +
                     std::to_string(split[d]) +
                     " devices: shards are uneven (torch.chunk: the last are smaller)",
                 "choose a range divisible by " + std::to_string(split[d]));
    };
    check_even(sp.result);
    for (const auto& op : sp.operands)
        check_even(op);
    // Chain step labels are expectations for that step.
    if (ch)
        for (std::size_t i = 0; i < ch->steps.size() && i < chain_cols.size(); ++i) {
            const auto& st = ch->steps[i];
            if (!st.expect || options.ignore_dims) continue;
            std::vector<std::string> want;
            bool ok = st.expect->collectives.size() == chain_cols[i].size();
            for (std::size_t j = 0; j < st.expect->collectives.size(); ++j) {
                const auto name = std::string(collective_name(st.expect->collectives[j].kind));
                want.push_back(name);
                if (ok) ok = chain_cols[i][j].rfind(name + "(", 0) == 0;
            }
            if (!ok)
                ctx.diag(Severity::Error, Code::S302, st.to.range,
                         "the arrow says " + join_or_none(want) + ", but this step needs " +
                             join_or_none(chain_cols[i]),
                         "label the arrow with the step's collectives, every moved tensor's in "
                         "written order, or drop the label");
        }

    for (const auto& v : ev.moved_also)
        sp.also_stored.push_back(v.id);
    if (outcomes.size() > 1) ctx.spare_steps = std::move(outcomes.back().steps);
    out.result = std::move(*result);
    out.moved_also = std::move(ev.moved_also);
    return true;
}

} // namespace shardscope::semantics::detail
