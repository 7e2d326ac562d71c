// The evaluator: rules 1-4, functions, `+ - /`, chains, the left-hand-side table and uses
// across statements (NOTATION.md section 6).
#include "evaluator.hpp"

#include "redistribute.hpp"

#include "parser/printer.hpp"
#include "parser/visit.hpp"

#include <functional>
#include <string_view>

namespace shardscope::semantics::detail {

namespace {

/// The concatenation of `parts` in one allocation (a chain of `+` makes one per step).
/// `i` as written (`d'`); an unprimed index is its name, without building it again.
std::string text_of(const IndexId& i) {
    return i.primes == 0 ? i.name : i.text();
}

template <class... S>
std::string cat(const S&... parts) {
    std::string out;
    out.reserve((std::string_view(parts).size() + ...));
    (out.append(std::string_view(parts)), ...);
    return out;
}

} // namespace

void Evaluator::error(std::string code, const ast::SourceRange& r, std::string msg,
                      std::string fix) {
    failed = true;
    if (report_) ctx_.diag(Severity::Error, std::move(code), r, std::move(msg), std::move(fix));
}

void Evaluator::warning(std::string code, const ast::SourceRange& r, std::string msg,
                        std::string fix) {
    if (report_) ctx_.diag(Severity::Warning, std::move(code), r, std::move(msg), std::move(fix));
}

void Evaluator::note(std::string code, const ast::SourceRange& r, std::string msg,
                     std::string fix) {
    if (report_) ctx_.diag(Severity::Note, std::move(code), r, std::move(msg), std::move(fix));
}

void Evaluator::not_as_written(std::string code, const ast::SourceRange& at, const std::string& msg,
                               std::string fix, bool note_otherwise) {
    if (ctx_.strict)
        error(std::move(code), at, msg + " (--strict)", std::move(fix));
    else if (note_otherwise)
        note(std::move(code), at, msg);
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

std::int64_t Evaluator::split_count(const Value& v, const IndexId& i) const {
    // The sharding holds an entry or two: a scan compares fewer names than a binary search.
    for (const auto& [j, axes] : v.sharding)
        if (FlatOrder<IndexId>::equal(j, i)) {
            std::int64_t n = 1;
            for (int k : axes)
                n *= ctx_.axis_size(k);
            return n;
        }
    return 1;
}

std::int64_t Evaluator::local_extent(const Value& v, const Dim& d) const {
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
            a.index = p;
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
    const auto axes = ctx_.mesh.axes.size();
    t.placements.reserve(axes);
    for (std::size_t k = 0; k < axes; ++k) {
        // Value::placement, built in place.
        auto& p = t.placements.emplace_back();
        if (auto it = v.partial.find(static_cast<int>(k)); it != v.partial.end()) {
            p.kind = Kind::Partial;
            p.reduce = partial_op_of(it->second);
        } else if (const auto* i = v.sharded_index(static_cast<int>(k))) {
            p.kind = Kind::Shard;
            p.index = *i;
            p.dim = v.dim_of(*i);
        }
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

Step& Evaluator::compute(OpKind op, std::vector<int> ins, Value& out) {
    auto& s = steps.back();
    s.op = op;
    if (report_) s.inputs = std::move(ins); // the data flow serves only the reported plan
    out.id = new_value(out);
    s.output = out.id;
    return s;
}

Step& Evaluator::compute(OpKind op, int in, Value& out) {
    auto& s = compute(op, std::vector<int>{}, out);
    if (report_) s.inputs = {in};
    return s;
}

void Evaluator::record_operand(const Value& v) {
    if (report_) operands.push_back(values[static_cast<std::size_t>(v.id)].layout);
}

std::vector<int> Evaluator::ids_of(const std::vector<Value>& vs) {
    std::vector<int> out;
    for (const auto& v : vs)
        out.push_back(v.id);
    return out;
}

void Evaluator::add_collective(StepKind kind, int k, const Value& v, double group_bytes,
                               double local, std::string reason) {
    add_collective(kind, std::vector<int>{k}, v, group_bytes, local, std::move(reason));
}

void Evaluator::add_collective(StepKind kind, const std::vector<int>& ks, const Value& v,
                               double group_bytes, double local, std::string reason) {
    Step& s = steps.emplace_back(); // built in place: a Step is large
    s.kind = kind;
    s.mesh_axes = ks;
    s.tensor = v.name;
    s.elem_bytes = v.elem_bytes;
    std::int64_t n = 1;
    for (int k : ks)
        n *= ctx_.axis_size(k);
    if (n == 1) {
        // Over a single device nothing moves: the placement is relabelled locally.
        s.kind = StepKind::Slice;
        s.reason = std::string(step_kind_name(kind)) + " over " + axes_label(ks) +
                   ", which has size 1: nothing moves (" + reason + ")";
        return;
    }
    s.bytes_per_device = collective_bytes(kind, n, group_bytes, local);
    s.time_s = collective_time(kind, n, s.bytes_per_device, group_link(ctx_.links, ks));
    s.reason = std::move(reason);
}

std::string Evaluator::axes_label(const std::vector<int>& ks) const {
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
    const int in = v.id;
    const double local = local_bytes(v);
    std::int64_t n = 1;
    for (int k : ks)
        n *= ctx_.axis_size(k);
    const std::string label = axes_label(ks);
    switch (kind) {
    case StepKind::AllReduce:
        add_collective(
            kind, ks, v, local, local,
            cat("all-reduce ", v.name, " over ", label, " (", v.partial[ks.front()], "): ", why));
        for (int k : ks)
            v.partial.erase(k);
        break;
    case StepKind::ReduceScatter:
        add_collective(
            kind, ks, v, local, local,
            cat("reduce-scatter ", v.name, " over ", label, " onto ", text_of(*to), ": ", why));
        steps.back().to_index = *to;
        for (int k : ks) {
            v.partial.erase(k);
            v.sharding[*to].push_back(k);
        }
        break;
    case StepKind::AllGather:
        add_collective(
            kind, ks, v, local * static_cast<double>(n), local,
            cat("all-gather ", v.name, " over ", label, " (unshard ", text_of(*from), "): ", why));
        steps.back().from_index = *from;
        for (int k : ks)
            v.unshard(k);
        break;
    default:
        add_collective(StepKind::AllToAll, ks, v, local, local,
                       cat("all-to-all ", v.name, " over ", label, " (", text_of(*from), " -> ",
                           text_of(*to), "): ", why));
        steps.back().from_index = *from;
        steps.back().to_index = *to;
        for (int k : ks) {
            v.unshard(k);
            v.sharding[*to].push_back(k);
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
    s.detail = std::move(detail);
    s.flops_per_device = flops;
    s.reason = std::move(reason);
    if (kind == StepKind::Compute)
        s.time_s = compute_time(flops, bytes_moved, *ctx_.hw, v.elem_bytes, matrix);
}

void Evaluator::all_reduce(Value& v, int k, const std::string& why) {
    group_collective(v, StepKind::AllReduce, {k}, nullptr, nullptr, why);
}

void Evaluator::reduce_scatter(Value& v, int k, const IndexId& i, const std::string& why) {
    group_collective(v, StepKind::ReduceScatter, {k}, nullptr, &i, why);
}

void Evaluator::all_gather(Value& v, int k, const std::string& why) {
    auto i = v.sharded_on(k);
    if (!i) return;
    auto axes = v.sharding[*i];
    const auto pos = std::find(axes.begin(), axes.end(), k) - axes.begin();
    for (auto a = static_cast<std::ptrdiff_t>(axes.size()) - 1; a >= pos; --a)
        group_collective(v, StepKind::AllGather, {axes[static_cast<std::size_t>(a)]}, &*i, nullptr,
                         why);
}

void Evaluator::permute(Value& v, const FlatMap<IndexId, AxisList>& sharding,
                        const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs,
                        const std::vector<int>& axes, double bytes, double time_s,
                        const std::string& why) {
    const int in = v.id;
    Step s;
    s.tensor = v.name;
    s.elem_bytes = v.elem_bytes;
    s.pairs = pairs;
    if (pairs.empty()) {
        s.kind = StepKind::Slice;
        s.reason = "keep " + v.name +
                   "'s blocks where they are (each device's new block is "
                   "part of its own): " +
                   why;
    } else {
        s.kind = StepKind::Permute;
        s.mesh_axes = axes;
        s.bytes_per_device = bytes;
        s.time_s = time_s;
        std::string moves;
        for (const auto& [from, to] : pairs)
            moves += (moves.empty() ? "" : ", ") + std::to_string(from) + "->" + std::to_string(to);
        s.reason = "permute " + v.name + " (device " + moves + "): " + why;
    }
    steps.push_back(std::move(s));
    v.sharding = sharding;
    flow(in, v);
}

void Evaluator::slice(Value& v, int k, const IndexId& i, const std::string& why) {
    const int in = v.id;
    v.sharding[i].push_back(k);
    // A local step's words serve only the reported plan (the search reads collectives').
    add_local(StepKind::Slice, v, {},
              report_ ? cat("slice ", v.name, " locally along ", i.text(), " over ",
                            ctx_.axis_label(k), ": ", why)
                      : std::string());
    steps.back().to_index = i;
    flow(in, v);
}

const Value* Evaluator::written(const ast::TensorRef& r) {
    for (const auto& [ref, value] : ctx_.written_cache)
        if (ref == &r) return value.get();
    auto v = written_uncached(r);
    if (!v) return nullptr;
    auto owned = std::make_unique<Value>(std::move(*v));
    const Value* out = owned.get();
    if (report_ && !failed)
        ctx_.written_cache.emplace_back(&r, std::move(owned));
    else
        written_here_.push_back(std::move(owned));
    return out;
}

std::optional<Value> Evaluator::written_uncached(const ast::TensorRef& r) {
    Value v;
    v.name = parser::tensor_key(r.name, r.label);
    v.elem_bytes = ctx_.bytes_of(v.name);
    // Which index (or, as nullptr, the partial marker) uses each axis; words only on error.
    struct Owner {
        int axis;
        const ast::Index* who;
    };
    SmallVec<Owner, 4> owner;
    auto claim = [&](int k, const ast::Index* ix, const ast::SourceRange& at) {
        for (const auto& [axis, who] : owner) {
            if (axis != k) continue;
            auto what = [](const ast::Index* i) {
                return i ? "index " + id_of(*i).text() : std::string("the partial marker");
            };
            error("S101", at,
                  "tensor " + v.name + " uses " + ctx_.axis_label(k) + " twice (" + what(who) +
                      " and " + what(ix) + "): a tensor has one placement per mesh axis",
                  "shard at most one index over " + ctx_.axis_label(k) +
                      "; all-gather one of them first");
            return false;
        }
        owner.push_back({k, ix});
        return true;
    };
    v.dims.reserve(r.dims.size());
    for (const auto& d : r.dims) {
        Dim dim;
        dim.text = dim_text(d);
        dim.parts.reserve(d.parts.size());
        for (const auto& p : d.parts) {
            const auto id = id_of(p);
            if (v.has(id) || std::find(dim.parts.begin(), dim.parts.end(), id) != dim.parts.end()) {
                error("S103", p.range,
                      "index " + id.text() + " appears twice in tensor " + v.name +
                          " (a diagonal is not supported)",
                      "use a primed index for the second dimension (" + id.text() + "')");
                return std::nullopt;
            }
            dim.parts.push_back(id);
            for (const auto& a : p.axes) {
                const auto ks = ctx_.resolve_axis(a, report_);
                if (ks.empty()) {
                    failed = true;
                    return std::nullopt;
                }
                for (int k : ks) {
                    if (!claim(k, &p, a.range)) return std::nullopt;
                    v.sharding[id].push_back(k);
                }
            }
        }
        v.dims.push_back(std::move(dim));
    }
    for (const auto& a : r.partial_axes) {
        auto ks = ctx_.resolve_axis(a, report_);
        if (ks.empty()) {
            failed = true;
            return std::nullopt;
        }
        for (int k : ks) {
            if (!claim(k, nullptr, a.range)) return std::nullopt;
            v.partial[k] = "sum";
        }
    }
    return v;
}

bool Evaluator::writes_placement(const ast::TensorRef& r) {
    if (!r.partial_axes.empty()) return true;
    for (const auto& d : r.dims)
        for (const auto& p : d.parts)
            if (!p.axes.empty()) return true;
    return false;
}

std::optional<Value> Evaluator::use(const ast::TensorRef& r) {
    const Value* v = written(r);
    if (!v) return std::nullopt;
    auto it = defined_.find(v->name);
    if (it != defined_.end()) {
        const Value& def = it->second;
        if (def.dims.size() != v->dims.size()) {
            error("S104", r.range,
                  "tensor " + v->name + " was defined with " + std::to_string(def.dims.size()) +
                      " dimensions and is used with " + std::to_string(v->dims.size()));
            return std::nullopt;
        }
        if (!same_extents(r, *v, def, "used")) return std::nullopt;
        // The definition's layout, in this occurrence's index names (by position).
        Value have; // *v without its sharding (replaced below)
        have.name = v->name;
        have.dims = v->dims;
        have.partial = def.partial;
        have.elem_bytes = v->elem_bytes;
        have.id = v->id;
        for (std::size_t d = 0; d < def.dims.size(); ++d) {
            const auto& dp = def.dims[d].parts;
            const auto& up = v->dims[d].parts;
            for (std::size_t p = 0; p < dp.size(); ++p) {
                auto s = def.sharding.find(dp[p]);
                if (s == def.sharding.end()) continue;
                // Map to this use's index in the same position (or the dimension's first).
                const auto& target = p < up.size() ? up[p] : up.front();
                have.sharding[target] = s->second;
            }
        }
        have.id = new_value(have, v->name);
        if (!writes_placement(r)) {
            record_operand(have);
            return have;
        }
        // The use asks for a placement: redistribute if it differs.
        const auto before = steps.size();
        transition(have, *v, r.range, "requested by this use of " + v->name);
        if (steps.size() != before) {
            std::string moved;
            for (std::size_t s = before; s < steps.size(); ++s)
                if (is_collective(steps[s].kind))
                    moved +=
                        (moved.empty() ? "" : ", ") + std::string(step_kind_name(steps[s].kind));
            if (!moved.empty()) {
                const auto msg = v->name + " was defined with a different placement; " + moved +
                                 " inserted to give it the placement written here";
                not_as_written("S210", r.range, msg,
                               "write the use without mesh subscripts to inherit the "
                               "placement, or add the collective explicitly",
                               true);
            }
        }
        record_operand(have);
        return have;
    }
    Value out = *v;
    out.id = new_value(out, out.name);
    record_operand(out);
    return out;
}

void Evaluator::transition(Value& have, const Value& want, const ast::SourceRange& at,
                           const std::string& reason) {
    const int axes = static_cast<int>(ctx_.mesh.axes.size());
    // What no movement of blocks can produce.
    for (int k = 0; k < axes; ++k) {
        // The placements are built (with their words) only where one of the checks fails.
        const auto fp = have.partial.find(k);
        const auto tp = want.partial.find(k);
        const IndexId* fs = fp == have.partial.end() ? have.sharded_index(k) : nullptr;
        const IndexId* ts = tp == want.partial.end() ? want.sharded_index(k) : nullptr;
        const bool fails =
            (fp != have.partial.end() && tp != want.partial.end() && fp->second != tp->second) ||
            (ts && !have.has(*ts)) || (fs && tp != want.partial.end());
        if (!fails) continue;
        const auto from = have.placement(k);
        const auto to = want.placement(k);
        if (from.kind == Kind::Partial && to.kind == Kind::Partial && from.reduce != to.reduce) {
            error("S201", at,
                  from.text() + " cannot become " + to.text() + " on " + ctx_.axis_label(k),
                  "reduce it first (all-reduce), then take the " +
                      std::string(partial_op_name(to.reduce)));
            return;
        }
        if (to.kind == Kind::Shard && !have.has(to.index)) {
            error("S202", at,
                  (from.kind == Kind::Partial ? "cannot reduce-scatter onto "
                                              : "cannot move the sharding onto ") +
                      to.index.text() + ": the value has no such index");
            return;
        }
        if (from.kind == Kind::Shard && to.kind == Kind::Partial) {
            error("S200", at,
                  "a tensor sharded on " + ctx_.axis_label(k) + " (along " + from.index.text() +
                      ") cannot become partial (S -> P)",
                  "drop the {U_" + ctx_.axis_name(k) +
                      "} marker, or shard the left-hand side along " + from.index.text());
            return;
        }
    }
    // The problem in the search's terms: atoms in storage order, axes and partials.
    std::vector<IndexId> atoms;
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
    p.links = ctx_.links;
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
        s.partial.assign(static_cast<std::size_t>(axes), 0);
        for (const auto& [k, op] : v.partial)
            s.partial[static_cast<std::size_t>(k)] = op == "max" ? 'm' : 's';
        return s;
    };
    const LayoutState from = state_of(have);
    const LayoutState to = state_of(want);
    if (from == to) return;
    const auto moves = plan_redistribution(p, from, to);
    if (!moves) {
        error("S204", at,
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
                ? reason + " (" +
                      (m.kind == MoveKind::ReduceScatter ? "scattered" : "gathered back") +
                      ": a hierarchical all-reduce, the rest reduced on the "
                      "part between)"
                : reason;
        const int k = m.axes.empty() ? -1 : m.axes.front();
        if (m.kind == MoveKind::AllReduce || m.kind == MoveKind::ReduceScatter ||
            m.kind == MoveKind::AllGather || m.kind == MoveKind::AllToAll) {
            const auto* i = m.from >= 0 ? &atoms[static_cast<std::size_t>(m.from)] : nullptr;
            const auto* j = m.to >= 0 ? &atoms[static_cast<std::size_t>(m.to)] : nullptr;
            const StepKind kind = m.kind == MoveKind::AllReduce       ? StepKind::AllReduce
                                  : m.kind == MoveKind::ReduceScatter ? StepKind::ReduceScatter
                                  : m.kind == MoveKind::AllGather     ? StepKind::AllGather
                                                                      : StepKind::AllToAll;
            group_collective(have, kind, m.axes, i, j, why);
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
            have.partial[k] = m.op == 'm' ? "max" : "sum";
            add_local(StepKind::Compute, have, "keep one copy",
                      "R -> P on " + ctx_.axis_label(k) +
                          ": keep one device's copy, zero the others (local)");
            compute(OpKind::KeepOne, in, have).mesh_axes = {k};
            break;
        }
        case MoveKind::Permute: {
            FlatMap<IndexId, AxisList> sharding;
            for (std::size_t a = 0; a < atoms.size(); ++a)
                if (!to.axes[a].empty())
                    for (int ax : to.axes[a])
                        sharding[atoms[a]].push_back(ax);
            permute(have, sharding, m.pairs, m.permute_axes, m.bytes, m.time_s, why);
            break;
        }
        }
    }
}

void Evaluator::collect(const ast::Expr& e, IndexSet& out) {
    ast::for_each_index(e, [&](const ast::Index& i) { out.insert(id_of(i)); });
}

std::optional<Value> Evaluator::eval(const ast::Expr& e, const IndexSet& outside) {
    if (failed) return std::nullopt;
    return std::visit([&](const auto& n) { return eval_node(n, e, outside); }, e.node);
}

std::optional<std::vector<Value>> Evaluator::eval_operands(const std::vector<ast::Expr>& operands,
                                                           const IndexSet& outside) {
    // A tensor or a number ignores what is needed outside it: only the other operands need
    // their siblings' indices (most products are of tensors alone).
    auto leaf = [](const ast::Expr& x) {
        return std::holds_alternative<ast::TensorRef>(x.node) ||
               std::holds_alternative<ast::Number>(x.node);
    };
    const auto non_leaves = static_cast<std::size_t>(std::count_if(
        operands.begin(), operands.end(), [&](const ast::Expr& x) { return !leaf(x); }));
    std::vector<IndexSet> idx(non_leaves == 0 ? 0 : operands.size());
    // Operand i's indices are read only by the other operands that are no leaves.
    for (std::size_t i = 0; i < idx.size(); ++i)
        if (non_leaves - (leaf(operands[i]) ? 0 : 1) > 0) collect(operands[i], idx[i]);
    std::vector<Value> ops;
    ops.reserve(operands.size());
    for (std::size_t i = 0; i < operands.size(); ++i) {
        if (leaf(operands[i])) {
            auto v = eval(operands[i], outside);
            if (!v) return std::nullopt;
            ops.push_back(std::move(*v));
            continue;
        }
        IndexSet out = outside;
        for (std::size_t j = 0; j < operands.size(); ++j)
            if (j != i) out.insert(idx[j].begin(), idx[j].end());
        auto v = eval(operands[i], out);
        if (!v) return std::nullopt;
        ops.push_back(std::move(*v));
    }
    return ops;
}

std::optional<Value> Evaluator::eval_node(const ast::Number& n, const ast::Expr&, const IndexSet&) {
    Value v;
    v.name = "scalar";
    v.elem_bytes = ctx_.dtype_bytes;
    v.id = new_value(v, {}, n.text);
    return v;
}

std::optional<Value> Evaluator::eval_node(const ast::TensorRef& r, const ast::Expr&,
                                          const IndexSet&) {
    return use(r);
}

std::optional<Value> Evaluator::eval_node(const ast::Product& p, const ast::Expr& e,
                                          const IndexSet& outside) {
    auto ops = eval_operands(p.factors, outside);
    if (!ops) return std::nullopt;
    // Numbers are never negative (a minus sign is a negated term): scaling by one keeps a
    // partial max a partial max.
    std::vector<bool> constant(p.factors.size());
    for (std::size_t f = 0; f < p.factors.size(); ++f)
        constant[f] = std::holds_alternative<ast::Number>(p.factors[f].node);
    return einsum(*ops, outside, e.range, constant);
}

void Evaluator::partial_needs_reduction(const Value& v, int k, const ast::SourceRange& at,
                                        const char* where) {
    not_as_written("S211", at,
                   "partial operand " + v.name + " needs a reduction on " + ctx_.axis_label(k) +
                       " " + where,
                   "reduce it in an earlier statement, or write the collective explicitly", false);
}

void Evaluator::partial_max_needs_reduction(Value& v, int k, const ast::SourceRange& at,
                                            const std::string& what) {
    not_as_written("S215", at,
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
    const IndexId* first = nullptr;
    bool several = false;
    for (const auto& v : ops)
        if (const auto* i = v.sharded_index(k)) {
            if (!first)
                first = i;
            else if (!FlatOrder<IndexId>::equal(*first, *i))
                several = true;
        }
    if (!several) return;
    std::vector<IndexId> distinct;
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
    not_as_written("S212", at, why + ": " + what + " cannot be computed locally",
                   "all-gather one operand over " + ctx_.axis_label(k) + " explicitly", false);
}

std::optional<Value> Evaluator::einsum(std::vector<Value>& ops, const IndexSet& outside,
                                       const ast::SourceRange& at,
                                       const std::vector<bool>& constant) {
    const int axes = static_cast<int>(ctx_.mesh.axes.size());
    for (int k = 0; k < axes; ++k) {
        // A partial max survives a product only with non-negative numbers (positive scaling)
        // and when none of its indices is summed: max(a) * y or sum_i max(a_i) is no max.
        for (std::size_t o = 0; o < ops.size(); ++o) {
            auto pit = ops[o].partial.find(k);
            if (pit == ops[o].partial.end() || pit->second != "max") continue;
            bool keeps = true;
            for (std::size_t q = 0; q < ops.size(); ++q)
                if (q != o && !(q < constant.size() && constant[q])) keeps = false;
            for (const auto& i : ops[o].indices())
                if (!outside.count(i)) keeps = false;
            if (keeps) continue;
            fixed_up = true;
            partial_max_needs_reduction(ops[o], k, at, "a product");
        }
        // Rule 4: a partial operand may meet only replicated operands.
        bool any_partial = false;
        for (const auto& v : ops)
            any_partial = any_partial || v.partial.count(k) > 0;
        std::vector<std::size_t> partials;
        std::optional<IndexId> any_sharded;
        for (std::size_t o = 0; any_partial && o < ops.size(); ++o) {
            if (ops[o].partial.count(k)) partials.push_back(o);
            if (auto i = ops[o].sharded_on(k)) any_sharded = i;
        }
        if (!partials.empty() && (partials.size() > 1 || any_sharded)) {
            fixed_up = true;
            // Keep one partial operand when nothing on k is sharded (P x R -> P).
            const std::size_t first = any_sharded ? 0 : 1;
            for (std::size_t q = first; q < partials.size(); ++q) {
                auto& v = ops[partials[q]];
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
        }
        // Rule 3: two different indices sharded on the same axis.
        keep_one_sharded_index(ops, k, at, "the product");
    }
    // Indices: result keeps those needed outside this product.
    std::vector<IndexId> order;
    order.reserve(kFirstCapacity);
    for (const auto& v : ops)
        for (const auto& d : v.dims)
            for (const auto& i : d.parts)
                if (std::none_of(order.begin(), order.end(),
                                 [&](const IndexId& o) { return FlatOrder<IndexId>::equal(o, i); }))
                    order.push_back(i);
    Value out;
    out.name = temp_name();
    out.elem_bytes = ops.empty() ? ctx_.dtype_bytes : ops.front().elem_bytes;
    out.dims.reserve(order.size());
    for (const auto& i : order)
        if (outside.count(i)) out.dims.push_back({{i}, text_of(i)});
    // Per index: the operands' axis lists (major to minor) must agree, one being a prefix
    // of the other (the shorter then slices locally). Otherwise keep one list, gather the rest.
    for (const auto& i : order) {
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
            not_as_written("S212", at,
                           "the operands shard " + i.text() + " over different mesh axes",
                           "all-gather one operand first, explicitly", false);
        }
    }
    // Per axis: the one sharded index (rule 2), or a partial operand (P x R -> P).
    for (int k = 0; k < axes; ++k) {
        const IndexId* sharded = nullptr; // valid until a gather below
        for (const auto& v : ops)
            if (const auto* i = v.sharded_index(k)) sharded = i;
        for (const auto& v : ops)
            if (v.partial.count(k)) out.partial[k] = v.partial.at(k);
        if (!sharded) continue;
        const bool kept = outside.count(*sharded) > 0;
        if (!kept) {
            // Contraction over a sharded index: P(sum). Gathering first is the alternative.
            const int c = choose(2, true);
            if (c == 1) {
                const auto why = "alternative: gather before contracting " + sharded->text();
                for (auto& v : ops)
                    if (v.sharded_index(k)) all_gather(v, k, why);
                continue;
            }
            out.partial[k] = "sum";
        }
    }
    // Gathering an index over a major axis gathers its minor axes too (all_gather): an axis
    // taken as P(sum) above that no operand shards any more is contracted whole, not
    // partially (no operand is partial on an axis that shards an index: rule 4).
    for (int k = 0; k < axes; ++k) {
        bool sharded = false;
        for (const auto& v : ops)
            sharded |= v.sharded_index(k) != nullptr;
        bool partial_operand = false;
        for (const auto& v : ops)
            partial_operand |= v.partial.count(k) > 0;
        if (!sharded && !partial_operand) out.partial.erase(k);
    }
    // Operands holding a sharded index on fewer axes slice locally to the full list (rule 2).
    for (const auto& i : order) {
        AxisList target;
        for (const auto& v : ops)
            if (auto it = v.sharding.find(i);
                it != v.sharding.end() && it->second.size() > target.size())
                target = it->second;
        if (target.empty()) continue;
        for (auto& v : ops) {
            if (!v.has(i)) continue;
            auto& mine = v.sharding[i];
            while (mine.size() < target.size()) {
                const int in = v.id;
                const int k = target[mine.size()];
                add_local(StepKind::Slice, v, {},
                          report_ ? cat("slice ", v.name, " locally along ", i.text(), " over ",
                                        ctx_.axis_label(k), " (free)")
                                  : std::string());
                steps.back().to_index = i;
                mine.push_back(k);
                flow(in, v);
            }
        }
        if (outside.count(i)) out.sharding[i] = target;
    }
    // Local compute: pairwise contraction, greedily the cheapest pair first.
    double flops = 0, moved = 0;
    std::vector<IndexSet> live;
    // The equation in words only on the reporting run: the search reads costs, not words.
    std::string spec;
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
    auto local_ext = [&](const IndexId& i) {
        std::int64_t n = 1;
        for (const auto& v : ops)
            if (auto it = v.sharding.find(i); it != v.sharding.end()) {
                for (int k : it->second)
                    n *= ctx_.axis_size(k);
                break;
            }
        return static_cast<double>(ceil_div(ctx_.range(i), n));
    };
    // Each index's local extent once, and each pair's cost once (the merged operand's pairs
    // are recomputed): a product of n operands costs O(n^2) pair costs, not O(n^3).
    const std::size_t n = live.size();
    FlatMap<IndexId, double> ext;
    if (n > 2)
        for (const auto& set : live)
            for (const auto& i : set)
                if (!ext.count(i)) ext[i] = local_ext(i);
    auto pair_cost = [&](const IndexSet& x, const IndexSet& y) {
        IndexSet u = x;
        u.insert(y.begin(), y.end());
        double f = 2;
        for (const auto& i : u)
            f *= n > 2 ? ext.at(i) : local_ext(i);
        return f;
    };
    // cost[slot[a] * n + slot[b]]: the pair (a, b) of live operands, by their first positions.
    std::vector<std::size_t> slot;
    std::vector<double> cost;
    if (n > 2) {
        slot.resize(n);
        cost.resize(n * n);
        for (std::size_t a = 0; a < n; ++a) {
            slot[a] = a;
            for (std::size_t b = a + 1; b < n; ++b)
                cost[a * n + b] = pair_cost(live[a], live[b]);
        }
    }
    if (one_pair) {
        // The pair's cost as pair_cost computes it: the extents multiplied in index order.
        SmallVec<const IndexId*, 16> u;
        for (const auto& i : order)
            u.push_back(&i);
        std::sort(u.begin(), u.end(), [](const IndexId* a, const IndexId* b) {
            return FlatOrder<IndexId>::less(*a, *b);
        });
        flops = 2;
        for (const auto* i : u)
            flops *= local_ext(*i);
    }
    while (live.size() > 1) {
        double best = -1;
        std::size_t ba = 0, bb = 1;
        for (std::size_t a = 0; a < live.size(); ++a)
            for (std::size_t b = a + 1; b < live.size(); ++b) {
                const double f = n > 2 ? cost[slot[a] * n + slot[b]] : pair_cost(live[a], live[b]);
                if (best < 0 || f < best) best = f, ba = a, bb = b;
            }
        flops += best;
        if (live.size() == 2) break; // the last pair: what it keeps is the result's
        IndexSet u = live[ba];
        u.insert(live[bb].begin(), live[bb].end());
        // Keep indices needed by the rest or outside.
        IndexSet keep;
        for (const auto& i : u) {
            bool needed = outside.count(i) > 0;
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
    if (report_) {
        spec += " -> ";
        for (std::size_t d = 0; d < out.dims.size(); ++d) {
            if (d) spec += ' ';
            spec += out.dims[d].text;
        }
    }
    moved += local_bytes(out);
    add_local(StepKind::Compute, out, std::move(spec), "local einsum", flops, moved, true);
    compute(OpKind::Einsum, report_ ? ids_of(ops) : std::vector<int>{}, out);
    return out;
}

std::optional<Value> Evaluator::eval_node(const ast::Call& c, const ast::Expr& e,
                                          const IndexSet& outside) {
    // The argument must keep the indices the call names (what it reduces or normalises over).
    std::optional<Value> arg;
    if (c.indices.empty()) {
        arg = eval(*c.arg, outside);
    } else {
        IndexSet inner = outside;
        for (const auto& i : c.indices)
            inner.insert(id_of(i));
        arg = eval(*c.arg, inner);
    }
    if (!arg) return std::nullopt;
    Value v = std::move(*arg);
    const auto kind = ctx_.function_kind(c.function);
    const int axes = static_cast<int>(ctx_.mesh.axes.size());
    const auto elems = local_elements(v);
    const auto steps_at_elems = steps.size(); // no step since: `v` is as `elems` counted it
    // The result takes over the argument's layout (`v` is not used after it).
    auto finish = [&](const std::string& detail, OpKind op = OpKind::Function) {
        const int in = v.id;
        const double moved =
            2 * (steps.size() == steps_at_elems ? elems * v.elem_bytes : local_bytes(v));
        Value out = std::move(v);
        out.name = temp_name();
        add_local(StepKind::Compute, out, report_ ? detail : std::string(),
                  report_ ? cat(c.function, " (local)") : std::string(), elems, moved);
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
                if (auto it = v.partial.find(k); it != v.partial.end() && it->second == "max")
                    partial_max_needs_reduction(v, k, e.range, c.function.c_str());
        return finish(c.function, OpKind::Linear);
    case ast::FunctionKind::Elementwise: {
        std::vector<int> reduce;
        for (int k = 0; k < axes; ++k)
            if (v.partial.count(k)) {
                const auto msg = "the input of " + c.function + " is partial over " +
                                 ctx_.axis_label(k) + "; " + c.function +
                                 " is non-linear, so it is all-reduced first";
                // A warning, not a note: the all-reduce changes the data, not only its
                // placement, and a note is hidden by check -q (issue 20).
                const char* fix = "reduce the input in an earlier statement, or write "
                                  "AllReduce explicitly";
                if (ctx_.strict)
                    not_as_written("S214", e.range, msg, fix, true);
                else
                    warning("S214", e.range, msg, fix);
                reduce.push_back(k);
            }
        complete(v, reduce, e.range, c.function + " is non-linear and needs a complete input");
        return finish(c.function);
    }
    case ast::FunctionKind::Reduction: {
        if (c.indices.empty()) {
            error("S120", e.range,
                  c.function + " needs the index it reduces over, as in " + c.function + "_s(x)");
            return std::nullopt;
        }
        const std::string op = c.function == "max" ? "max" : "sum";
        std::vector<int> reduce;
        for (int k = 0; k < axes; ++k)
            if (auto it = v.partial.find(k); it != v.partial.end() && it->second != op)
                reduce.push_back(k);
        if (!reduce.empty())
            complete(v, reduce, e.range,
                     c.function + " cannot pass a P(" + v.partial.at(reduce.front()) + ") input");
        IndexSet gone;
        for (const auto& i : c.indices) {
            if (!v.has(id_of(i))) {
                error("S121", i.range,
                      c.function + " reduces over " + id_of(i).text() +
                          ", which its argument does not have");
                return std::nullopt;
            }
            gone.insert(id_of(i));
        }
        Value out = without(v, gone, op);
        add_local(StepKind::Compute, out, c.function, c.function + " over the local shard", elems,
                  local_bytes(v));
        compute(OpKind::Reduce, v.id, out).function = c.function;
        return out;
    }
    case ast::FunctionKind::Softmax: {
        std::vector<int> reduce;
        for (int k = 0; k < axes; ++k)
            if (v.partial.count(k)) reduce.push_back(k);
        complete(v, reduce, e.range, "softmax needs a complete input");
        if (c.indices.size() != 1 || !v.has(id_of(c.indices[0]))) {
            error("S122", e.range,
                  "softmax needs one index of its argument to normalise over, as in "
                  "softmax_v(z)");
            return std::nullopt;
        }
        const auto along = id_of(c.indices[0]);
        if (auto it = v.sharding.find(along); it != v.sharding.end()) {
            fixed_up = true;
            const int choice = choose(2, false);
            if (choice == 0) {
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
                        steps.back().function = stat;
                    }
            } else {
                all_gather(v, AxisList(it->second).front(),
                           "softmax along sharded " + along.text());
            }
            not_as_written("S213", e.range,
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

Value Evaluator::sum_local_chunk(Value v, const IndexId& i) {
    IndexSet gone;
    gone.insert(i);
    const double elems = local_elements(v);
    Value out = without(v, gone, "sum");
    add_local(StepKind::Compute, out, "sum " + i.text(), "sum over the local chunk of " + i.text(),
              elems, local_bytes(v));
    compute(OpKind::Reduce, v.id, out).function = "sum";
    return out;
}

std::optional<Value> Evaluator::explicit_collective(const ast::Call& c, Value v,
                                                    const ast::Expr& e) {
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
        error("S123", e.range,
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
                if (!v.partial.count(k) || v.partial.at(k) != v.partial.at(ks.front()))
                    return false;
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
            if (v.partial.count(k)) {
                all_reduce(v, k, why);
            } else if (v.sharded_index(k) && *v.sharded_index(k) == i) {
                // A sum over a device index: the local sum over this device's chunk,
                // then the cross-device sum is the all-reduce.
                v = sum_local_chunk(std::move(v), i);
                all_reduce(v, k, why);
            } else {
                error("S124", e.range,
                      "AllReduce over " + ctx_.axis_label(k) + ", but " + v.name +
                          " is not partial there");
                return std::nullopt;
            }
        } else if (c.function == "AllGather") {
            // Gathering an index over a major axis gathers its minor axes too (all_gather):
            // AllGather_{i_{01}} is done once axis 0 is.
            if (std::find(gathered.begin(), gathered.end(), k) != gathered.end()) continue;
            if (!v.sharded_index(k)) {
                error("S124", e.range,
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
            if (!v.partial.count(k) || !v.has(i)) {
                error("S124", e.range,
                      "ReduceScatter onto " + i.text() + " over " + ctx_.axis_label(k) +
                          " needs a partial value with index " + i.text());
                return std::nullopt;
            }
            reduce_scatter(v, k, i, why);
        } else {
            error("S125", e.range, c.function + " is not supported as a function yet",
                  "write the redistribution as a chain, e.g. x_{i_0 j} -> x_{i j_0}");
            return std::nullopt;
        }
    }
    return v;
}

std::optional<Value> Evaluator::combine(std::vector<Value>& ops, bool quotient,
                                        const ast::SourceRange& at, std::vector<bool> negated) {
    const int axes = static_cast<int>(ctx_.mesh.axes.size());
    for (int k = 0; k < axes; ++k) {
        keep_one_sharded_index(ops, k, at, "the operation");
        std::optional<IndexId> sharded;
        for (const auto& v : ops)
            if (auto i = v.sharded_on(k)) sharded = i;
        // Partial operands: P + P -> P; otherwise reduce. A quotient's denominator is
        // reduced; its numerator may stay partial over a replicated denominator.
        // Only P(sum) operands add up to a P(sum) (a partial max is reduced below).
        std::size_t partial_count = 0;
        for (const auto& v : ops)
            if (auto it = v.partial.find(k); it != v.partial.end() && it->second == "sum")
                ++partial_count;
        for (std::size_t o = 0; o < ops.size(); ++o) {
            auto& v = ops[o];
            if (!v.partial.count(k)) continue;
            // A sum of partial maxes (or a difference, or a quotient of one) is no partial max:
            // only P(sum) is linear.
            const bool summable = v.partial.at(k) == "sum";
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
    FlatMap<IndexId, AxisList> target;
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
    out.elem_bytes = ops.front().elem_bytes;
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
            out.partial[k] = op;
    }
    double moved = 0;
    for (const auto& v : ops)
        moved += local_bytes(v);
    add_local(StepKind::Compute, out, quotient ? "divide" : "add", "elementwise (local)",
              local_elements(out), moved + local_bytes(out));
    negated.resize(ops.size(), false);
    compute(quotient ? OpKind::Divide : OpKind::Add, report_ ? ids_of(ops) : std::vector<int>{},
            out)
        .negated = quotient ? std::vector<bool>{} : negated;
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
            if (auto it = ops->front().partial.find(k);
                it != ops->front().partial.end() && it->second == "max")
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
    auto num = eval(*q.num, out_num);
    auto den = num ? eval(*q.den, out_den) : std::nullopt;
    if (!num || !den) return std::nullopt;
    std::vector<Value> ops{std::move(*num), std::move(*den)};
    return combine(ops, true, e.range);
}

Value Evaluator::without(const Value& v, const IndexSet& gone, const std::string& op) {
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
                        out.partial[k] = op;
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

void Evaluator::reduce_leftovers(Value& v, const IndexSet& keep, const ast::SourceRange& at) {
    IndexSet gone; // a value's indices are distinct: no set of them first
    for (const auto& d : v.dims)
        for (const auto& i : d.parts)
            if (!keep.count(i)) gone.insert(i);
    if (gone.empty()) return;
    // A sum over a partial max is no partial max: reduce it first.
    const int axes = static_cast<int>(ctx_.mesh.axes.size());
    for (int k = 0; k < axes; ++k)
        if (auto it = v.partial.find(k); it != v.partial.end() && it->second == "max")
            partial_max_needs_reduction(v, k, at, "a sum over the indices absent from the left");
    const double elems = local_elements(v);
    const double bytes = local_bytes(v);
    std::string names;
    Value out = without(v, gone, "sum");
    for (const auto& i : gone)
        names += (names.empty() ? "" : " ") + i.text();
    const int in = v.id;
    v = std::move(out);
    add_local(StepKind::Compute, v, "sum " + names,
              "sum over " + names + " (absent from the left-hand side)", elems, bytes);
    compute(OpKind::Reduce, in, v).function = "sum";
}

std::optional<Value> Evaluator::equation(const ast::Equation& eq, const ast::SourceRange& at) {
    const Value* lhs = written(eq.lhs);
    if (!lhs) return std::nullopt;
    IndexSet outside = lhs->indices();
    auto rhs = eval(eq.rhs, outside);
    if (!rhs) return std::nullopt;
    for (const auto& i : outside)
        if (!rhs->has(i)) {
            error("S130", eq.lhs.range,
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
            return *stored;
        }
    // The left-hand side states the result's placement.
    transition(*rhs, *lhs, at, "the left-hand side asks for it");
    result_id = rhs->id;
    return *lhs;
}

bool Evaluator::same_extents(const ast::TensorRef& r, const Value& v, const Value& def,
                             const char* how) {
    for (std::size_t d = 0; d < def.dims.size() && d < v.dims.size(); ++d) {
        const auto was = global_extent(def.dims[d]), now = global_extent(v.dims[d]);
        if (was == now) continue;
        error("S105", r.range,
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
        error("S104", r.range,
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
            error("S104", r.range,
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
        error("S203", r.range,
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

std::vector<IndexId>
Evaluator::atoms(const std::vector<Dim>& dims,
                 const std::map<IndexId, std::vector<IndexId>>& learned) const {
    std::vector<IndexId> out;
    // Depth-limited: `split a -> b c` with `split b -> a d` must not recurse forever.
    std::function<void(const IndexId&, int)> expand = [&](const IndexId& i, int depth) {
        const std::vector<IndexId>* parts = nullptr;
        if (auto l = learned.find(i); l != learned.end())
            parts = &l->second;
        else if (auto d = ctx_.splits.find(i); d != ctx_.splits.end())
            parts = &d->second;
        if (!parts || depth > 16) {
            out.push_back(i);
            return;
        }
        for (const auto& p : *parts)
            expand(p, depth + 1);
    };
    for (const auto& d : dims)
        for (const auto& p : d.parts)
            expand(p, 0);
    return out;
}

bool Evaluator::product_sides(const ast::Chain& ch) {
    bool product = ch.product();
    for (const auto& st : ch.steps)
        product |= !st.with.empty();
    if (!product) return true;
    // A chain of products (`W^0 x -> W^0 x'`) moves one factor; the others are context, written
    // on every side as they are. A product implies no contraction (NOTATION.md section 4).
    const auto key = [](const ast::TensorRef& r) { return parser::tensor_key(r.name, r.label); };
    const auto first = ast::chain_side(ch.from, ch.with, ch.moved);
    const auto at = std::min(ch.moved, ch.with.size());
    auto prev = first;
    for (const auto& st : ch.steps) {
        const auto side = ast::chain_side(st.to, st.with, ch.moved);
        if (side.size() != first.size()) {
            const auto tensors = [](std::size_t n) {
                return std::to_string(n) + (n == 1 ? " tensor" : " tensors");
            };
            error("S141", side.back()->range,
                  "this side of the chain has " + tensors(side.size()) + ", the first side " +
                      tensors(first.size()) + ": every side of a chain lists the same tensors",
                  "write the first side's tensors on every side, in the same order (a chain "
                  "only moves tensors; compute a product with an equation, y = W x)");
            return false;
        }
        for (std::size_t p = 0; p < side.size(); ++p) {
            if (key(*side[p]) != key(*first[p])) {
                error("S141", side[p]->range,
                      "this side of the chain has " + key(*side[p]) + " where the first side has " +
                          key(*first[p]) + ": every side of a chain lists the same tensors",
                      "write the first side's tensors on every side, in the same order (a chain "
                      "only moves tensors; compute a product with an equation, y = W x)");
                return false;
            }
            if (p != at && !(*side[p] == *prev[p])) {
                error("S142", side[p]->range,
                      key(*side[p]) + " changes here, and the chain already moves " + key(ch.from) +
                          ": a chain of products moves one tensor, the other factors are written "
                          "as they are, for context",
                      "move " + key(*side[p]) + " in a chain of its own");
                return false;
            }
        }
        prev = side;
    }
    // The context factors must be valid occurrences (axes, ranges); they move nothing.
    for (const auto* r : first)
        if (r != &ch.from && !written(*r)) return false;
    return true;
}

std::optional<Value> Evaluator::chain(const ast::Chain& ch, const ast::SourceRange&,
                                      std::vector<std::vector<std::string>>& step_collectives) {
    if (!product_sides(ch)) return std::nullopt;
    auto cur = use(ch.from);
    if (!cur) return std::nullopt;
    // Splits learned from groups: x_{bsd} -> x_{(rc)sd} says b = (r c).
    std::map<IndexId, std::vector<IndexId>> learned;
    for (const auto& st : ch.steps) {
        const Value* next = written(st.to);
        if (!next) return std::nullopt;
        if (report_) operands.push_back(layout(*next));
        const auto before = steps.size();
        if (cur->dims.size() == next->dims.size())
            for (std::size_t d = 0; d < cur->dims.size(); ++d) {
                const auto& a = cur->dims[d].parts;
                const auto& b = next->dims[d].parts;
                const std::vector<IndexId>* group = nullptr;
                IndexId whole;
                if (a.size() == 1 && b.size() > 1 && std::find(b.begin(), b.end(), a[0]) == b.end())
                    group = &b, whole = a[0];
                // Merging a group back (x_{(rc)sd} -> x_{bsd}) says the same.
                else if (b.size() == 1 && a.size() > 1 &&
                         std::find(a.begin(), a.end(), b[0]) == a.end())
                    group = &a, whole = b[0];
                if (!group) continue;
                // A group that holds the index it groups through other splits has no range.
                auto parts_of = [&](const IndexId& i) -> const std::vector<IndexId>* {
                    if (auto l = learned.find(i); l != learned.end()) return &l->second;
                    return split_parts(ctx_.splits)(i);
                };
                for (const auto& p : *group)
                    if (auto path = split_path(parts_of, p, whole); !path.empty()) {
                        std::string cycle = whole.text();
                        for (const auto& i : path)
                            cycle += " -> " + i.text();
                        error("S007", st.to.range,
                              "this step makes index " + whole.text() +
                                  " a part of itself through splits (" + cycle + ")",
                              "name the group's parts apart from the splits of " + whole.text());
                        return std::nullopt;
                    }
                learned[whole] = *group;
            }
        const auto from_atoms = atoms(cur->dims, learned);
        const auto to_atoms = atoms(next->dims, learned);
        if (from_atoms != to_atoms) {
            std::string fa, ta;
            for (const auto& i : from_atoms)
                fa += i.text();
            for (const auto& i : to_atoms)
                ta += i.text();
            error("S140", st.to.range,
                  "this step changes the tensor's indices (" + fa + " -> " + ta +
                      "): a chain may only split, merge or move placements",
                  "declare the split ('split b -> r c') or write the group, as in x_{(r c) s d}");
            return std::nullopt;
        }
        bool reshaped = cur->dims.size() != next->dims.size();
        for (std::size_t d = 0; !reshaped && d < cur->dims.size(); ++d)
            reshaped = cur->dims[d].parts != next->dims[d].parts;
        // A sharded index shards its major atom; in the next layout, that is the index whose
        // own major atom it is (`g` of `(g n)` is `m` once `split m -> g n` merges them).
        auto major_atom = [&](const IndexId& x) {
            std::vector<Dim> one{{{x}, x.text()}};
            auto parts = atoms(one, learned);
            return parts.empty() ? x : parts.front();
        };
        // A sharded index that is split or merged here stays a local reshape only when both it
        // and the index that takes its sharding divide evenly over its devices (s_0 over 4
        // devices is no r_0 when r = 2): otherwise it is gathered before the reshape.
        if (reshaped) {
            std::vector<std::pair<IndexId, int>> uneven;
            for (const auto& [i, axes] : cur->sharding) {
                const auto a0 = major_atom(i);
                IndexId target = a0;
                bool found = false; // a minor part merged into a whole is no local reshape
                for (const auto& d : next->dims)
                    for (const auto& p : d.parts)
                        if (major_atom(p) == a0) target = p, found = true;
                std::int64_t n = 1;
                for (int k : axes)
                    n *= ctx_.axis_size(k);
                if (!found || ctx_.range(i) % n != 0 || ctx_.range(target) % n != 0)
                    uneven.push_back({i, axes.front()});
            }
            for (const auto& [i, k] : uneven) {
                all_gather(*cur, k,
                           "reshaping needs " + i.text() + " evenly sharded (its parts too)");
                not_as_written("S216", st.to.range,
                               "this step splits or merges " + i.text() +
                                   ", whose shards are not whole shards of the next layout "
                                   "(uneven over its devices, or a minor part merged): it is "
                                   "all-gathered before the reshape",
                               "gather " + i.text() +
                                   " in an earlier step, or shard a part "
                                   "whose range the devices divide",
                               true);
            }
        }
        // Express the current sharding in atoms, then move it to the next layout.
        Value have = *next;
        have.sharding.clear();
        have.partial = cur->partial;
        for (const auto& [i, axes] : cur->sharding) {
            const auto a0 = major_atom(i);
            IndexId target = a0;
            for (const auto& d : next->dims)
                for (const auto& p : d.parts)
                    if (major_atom(p) == a0) target = p;
            have.sharding[target] = axes;
        }
        have.id = cur->id;
        if (reshaped) {
            add_local(StepKind::Split, have, {},
                      "reshape " + next->name + " (split or merge indices, free)");
            flow(cur->id, have);
        }
        transition(have, *next, st.to.range, "the chain asks for it");
        result_id = have.id;
        std::vector<std::string> cols;
        for (std::size_t s = before; s < steps.size(); ++s)
            if (is_collective(steps[s].kind)) cols.push_back(collective_text(ctx_, steps[s]));
        step_collectives.push_back(cols);
        cur = *next;
        cur->id = have.id;
    }
    return cur;
}

} // namespace shardscope::semantics::detail
