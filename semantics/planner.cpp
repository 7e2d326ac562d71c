// The search over choices (every combination, replayed), the plan of one statement, its
// alternatives, plan notes, uneven-shard warnings and chain-step expectations.
#include "planner.hpp"

#include "evaluator.hpp"
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
    // The plan: alternatives off, cheapest fix.
    // An implied statement (computable as written) keeps the plan its notation implies;
    // a statement that needs a fix gets the cheapest legal plan of all.
    Outcome* best = nullptr;
    // Under --strict the plan is the statement as written, errors and all.
    const bool implied = outcomes.front().ok && !outcomes.front().fixed_up;
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
