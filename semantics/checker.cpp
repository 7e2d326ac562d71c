// The checker's entry points: a program's declarations, then each statement planned (or
// taken from the re-check cache) in order, with expectations compared (NOTATION.md 5-8).
#include "checker.hpp"

#include "context.hpp"
#include "cost.hpp"
#include "mesh_coords.hpp"
#include "planner.hpp"
#include "report.hpp"

#include "parser/printer.hpp"
#include "parser/visit.hpp"

#include <algorithm>
#include <bitset>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace shardscope::semantics {

namespace {

/// A range the inference gave the default to (a chain group's whole, so that its parts
/// multiply out), which is as undeclared as one that simply took it.
bool origin_is_default(const detail::Context& ctx, const IndexId& id) {
    auto it = ctx.range_origin.find(id);
    return it != ctx.range_origin.end() && it->second == "default";
}

} // namespace

bool same_layout(const TensorLayout& a, const TensorLayout& b) {
    if (a.atoms.size() != b.atoms.size() || a.placements.size() != b.placements.size())
        return false;
    for (std::size_t i = 0; i < a.atoms.size(); ++i)
        if (a.atoms[i].axes != b.atoms[i].axes) return false;
    for (std::size_t k = 0; k < a.placements.size(); ++k) {
        const auto& p = a.placements[k];
        const auto& q = b.placements[k];
        const bool pp = p.kind == Placement::Kind::Partial, qp = q.kind == Placement::Kind::Partial;
        if (pp != qp || (pp && p.reduce != q.reduce)) return false;
    }
    return true;
}

using namespace detail;

namespace {

// Re-checking: statements whose plan cannot have changed are taken from the cache.

/// A statement as planned by an earlier check, with what the plan depended on.
struct CachedStatement {
    std::string context; ///< the program-wide facts (context_key)
    std::vector<std::pair<std::string, std::optional<Value>>> reads; ///< defined tensors it names
    std::optional<Planned> planned;      ///< nullopt: the statement could not be planned
    std::vector<Diagnostic> diagnostics; ///< at the positions of `at`
    ast::SourceRange at;                 ///< where the statement was
    std::uint64_t generation = 0;        ///< the last check that used it
};

template <typename T>
void append_raw(std::string& out, const T& x) {
    out.append(reinterpret_cast<const char*>(&x), sizeof x);
}

/// Everything program-wide that a statement's plan depends on, as one comparable string.
std::string context_key(const Context& ctx, const CheckOptions& options) {
    std::string out;
    auto text = [&](const std::string& t) {
        append_raw(out, t.size());
        out += t;
    };
    auto index = [&](const IndexId& i) {
        text(i.name);
        append_raw(out, i.primes);
    };
    append_raw(out, ctx.has_mesh);
    for (const auto& a : ctx.mesh.axes) {
        text(a.name);
        append_raw(out, a.size);
    }
    out += '|';
    for (auto d : ctx.mesh.devices)
        append_raw(out, d);
    out += '|';
    for (const auto& [i, n] : ctx.ranges) {
        index(i);
        append_raw(out, n);
    }
    out += '|';
    for (const auto& [i, n] : ctx.shard_lcm) {
        index(i);
        append_raw(out, n);
    }
    out += '|';
    for (const auto& [i, parts] : ctx.splits) {
        index(i);
        for (const auto& p : parts)
            index(p);
        out += ';';
    }
    out += '|';
    append_raw(out, ctx.dtype_bytes);
    for (const auto& [t, b] : ctx.tensor_bytes) {
        text(t);
        append_raw(out, b);
    }
    out += '|';
    text(std::string(ctx.hw->name));
    for (const auto& l : ctx.links) {
        append_raw(out, l.bytes_per_second);
        append_raw(out, l.latency_s);
        append_raw(out, l.protocols.size());
    }
    for (const auto& [f, kind] : ctx.functions) {
        text(f);
        append_raw(out, kind);
    }
    out += '|';
    append_raw(out, ctx.strict);
    append_raw(out, ctx.small_defaults);
    append_raw(out, options.ignore_dims);
    return out;
}

/// `r`, which lay inside a statement at `from`, for the same statement at `to`.
ast::SourceRange moved(ast::SourceRange r, const ast::SourceRange& from,
                       const ast::SourceRange& to) {
    if (r.line == from.line) r.column = r.column - from.column + to.column;
    if (r.end_line == from.line) r.end_column = r.end_column - from.column + to.column;
    r.offset = r.offset - from.offset + to.offset;
    r.line = r.line - from.line + to.line;
    r.end_line = r.end_line - from.line + to.line;
    return r;
}

bool inside(const ast::SourceRange& r, const ast::SourceRange& s) {
    return r.offset >= s.offset && r.offset + r.length <= s.offset + s.length && r.line >= s.line &&
           (r.line > s.line || r.column >= s.column);
}

} // namespace

struct CheckCache::Impl {
    std::unordered_map<std::string, CachedStatement> entries; ///< by source and pretty form
    std::uint64_t generation = 0;
    std::size_t hits = 0;
};

CheckCache::CheckCache() : impl_(std::make_unique<Impl>()) {}
CheckCache::~CheckCache() = default;
CheckCache::CheckCache(CheckCache&&) noexcept = default;
CheckCache& CheckCache::operator=(CheckCache&&) noexcept = default;
std::size_t CheckCache::size() const {
    return impl_->entries.size();
}
std::size_t CheckCache::hits() const {
    return impl_->hits;
}
void CheckCache::clear() {
    impl_->entries.clear();
    impl_->hits = 0;
}

namespace {

/// The plan of statement `s` into `out`: the cached one when the statement, the program-wide
/// facts and the tensors it reads are unchanged (its diagnostics replayed at the new
/// position), else `plan_statement()`'s, which is then cached. False: it cannot be planned.
template <typename F>
bool cached_plan(CheckCache::Impl& cache, const std::string& context, const Defined& defined,
                 const ast::Statement& s, const std::string& source, const std::string& pretty,
                 std::vector<Diagnostic>& diagnostics, const PlanOut& out, F&& plan_statement) {
    std::string key = source;
    key += '\0';
    key += pretty;
    std::vector<std::pair<std::string, std::optional<Value>>> reads;
    ast::for_each_ref(s, [&](const ast::TensorRef& r) {
        auto name = parser::tensor_key(r.name, r.label);
        auto it = defined.find(name);
        reads.emplace_back(std::move(name),
                           it == defined.end() ? std::nullopt : std::optional<Value>(it->second));
    });
    if (auto it = cache.entries.find(key);
        it != cache.entries.end() && it->second.context == context && it->second.reads == reads) {
        auto& e = it->second;
        e.generation = cache.generation;
        ++cache.hits;
        for (auto d : e.diagnostics) {
            d.range = moved(d.range, e.at, s.range);
            diagnostics.push_back(std::move(d));
        }
        if (!e.planned) return false;
        out.plan = e.planned->plan;
        out.result = e.planned->result;
        out.moved_also = e.planned->moved_also;
        return true;
    }
    const auto first = diagnostics.size();
    std::optional<Planned> planned;
    if (plan_statement()) planned = Planned{out.plan, out.result, out.moved_also};
    const bool ok = planned.has_value();
    CachedStatement e{context,
                      std::move(reads),
                      std::move(planned),
                      {diagnostics.begin() + static_cast<std::ptrdiff_t>(first), diagnostics.end()},
                      s.range,
                      cache.generation};
    const bool positioned =
        std::all_of(e.diagnostics.begin(), e.diagnostics.end(),
                    [&](const Diagnostic& d) { return inside(d.range, s.range); });
    if (positioned) cache.entries.insert_or_assign(std::move(key), std::move(e));
    return ok;
}

} // namespace
namespace {

/// A read of a tensor that no earlier statement defined: an occurrence of a program input
/// (a later statement may store the name: reads before it still read the input).
struct InputRead {
    std::string key;
    const ast::TensorRef* ref;
    std::size_t statement; ///< in Plan::statements
    std::size_t operand;   ///< in its StatementPlan::operands
};

/// The largest count the cost model reports (S502): a double holds up to 1.8e308, and the
/// program totals add counts up and multiply them (training memory, repetitions), so a
/// margin is kept. Past it a count would print as `inf` (JSON `null`) or NaN.
constexpr double kMaxCount = 1e300;
bool countable(double x) {
    return x >= -kMaxCount && x <= kMaxCount; // false for NaN and infinity
}

/// "infinity", "NaN", else "1.23e+301"
std::string count_text(double x) {
    if (std::isnan(x)) return "NaN";
    if (std::isinf(x)) return x > 0 ? "infinity" : "-infinity";
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", x);
    return text;
}

/// The program's counts so far, summed as the totals sum them, for S502.
struct RunningCounts {
    double time_s = 0, flops = 0, bytes = 0, memory = 0;
    /// What the cost model cannot count once `sp` runs `repeat` times per step more: the
    /// statement's first count past kMaxCount ("FLOPs per device") and that count, or, when
    /// none is, the program's sum's (`program_wide`); {} when all are countable, and then the
    /// sums include `sp`. Each step's counts are at most the statement's sums (none is
    /// negative; a NaN spreads).
    std::pair<std::string_view, double> add(const StatementPlan& sp, double repeat,
                                            bool& program_wide) {
        const double own[4] = {sp.cost.time_s * repeat, sp.cost.flops_per_device * repeat,
                               sp.cost.comm_bytes_per_device * repeat,
                               sp.cost.memory_bytes_per_device};
        const double sum[4] = {time_s + own[0], flops + own[1], bytes + own[2], memory + own[3]};
        bool alternatives = true;
        for (const auto& a : sp.alternatives)
            alternatives &= countable(a.time_s * repeat);
        // Sums of non-negative counts: a countable sum has countable parts (a NaN fails).
        if (alternatives && countable(sum[0]) && countable(sum[1]) && countable(sum[2]) &&
            countable(sum[3])) {
            time_s = sum[0], flops = sum[1], bytes = sum[2], memory = sum[3];
            return {};
        }
        static constexpr std::string_view names[4] = {"time", "FLOPs per device",
                                                      "bytes sent per device", "memory per device"};
        program_wide = false;
        for (int k = 0; k < 4; ++k)
            if (!countable(own[k])) return {names[k], own[k]};
        for (const auto& a : sp.alternatives)
            if (!countable(a.time_s * repeat))
                return {"an alternative plan's time", a.time_s * repeat};
        program_wide = true;
        for (int k = 0; k < 4; ++k)
            if (!countable(sum[k])) return {k == 0 ? "time per step" : names[k], sum[k]};
        return {}; // not reached: one of the above is past kMaxCount
    }
};

/// "line 3, column 5"
std::string position_text(const ast::SourceRange& r) {
    return "line " + std::to_string(r.line) + ", column " + std::to_string(r.column);
}

/// Which planned statements reach a program output (`statements[i]` is the AST of
/// `plan.statements[i]`): the last definition of each tensor, and every statement whose
/// value a reaching statement reads. The others compute values that are overwritten unread
/// (teaching files collect unrelated displays that reuse names); grad derives nothing
/// through them.
std::vector<bool> reaching_outputs(const Plan& plan,
                                   const std::vector<const ast::Statement*>& statements) {
    std::vector<bool> live(statements.size(), false);
    std::unordered_set<std::string> needed, later;
    for (std::size_t j = statements.size(); j-- > 0;) {
        const auto& sp = plan.statements[j];
        const auto stores = sp.stores();
        bool lv = false;
        for (const auto& [name, layout] : stores)
            lv = lv || !later.count(name) || needed.count(name);
        for (const auto& [name, layout] : stores)
            later.insert(name);
        if (!lv) continue;
        live[j] = true;
        if (sp.assign == Assign::Define)
            for (const auto& [name, layout] : stores)
                needed.erase(name);
        const auto need = [&](const ast::TensorRef& r) {
            needed.insert(parser::tensor_key(r.name, r.label));
        };
        if (const auto* eq = std::get_if<ast::Equation>(&statements[j]->node))
            ast::for_each_ref(eq->rhs, need);
        else if (const auto* ch = std::get_if<ast::Chain>(&statements[j]->node))
            for (const auto* r : ast::chain_side(ch->from, ch->with, ch->moved))
                need(*r);
    }
    return live;
}

/// An input must be one tensor. Read with another shape where both reads reach an output
/// (grad refuses it, G202), it is an error (S106); read in another layout, a warning (S217:
/// the program needs the input in each layout, and nothing prices a redistribution between
/// them). Once per new shape or layout, at the read that introduces it, naming the read it
/// differs from.
void check_inputs(Context& ctx, const Plan& plan, const std::vector<InputRead>& reads,
                  const std::vector<const ast::Statement*>& statements) {
    const auto same_shape = [](const TensorLayout& a, const TensorLayout& b) {
        return a.global_shape == b.global_shape;
    };
    std::vector<bool> live; // computed when a shape differs
    // Per input name: each distinct shape and layout once, with the first read of it, and the
    // shapes reported (S106), as chains through the reads (`next`, by read position) in one
    // open-addressing table: a map node and a list per name cost heap blocks per input read.
    constexpr std::uint32_t kNone = ~std::uint32_t{0};
    struct Chain {
        std::uint32_t first = kNone, last = kNone;
    };
    struct Seen {
        std::size_t hash = 0;
        std::uint32_t read = kNone; ///< a read of this name; kNone: an empty slot
        Chain layouts, reported;
    };
    std::vector<std::uint32_t> next_layout(reads.size(), kNone), next_reported(reads.size(), kNone);
    std::size_t slots = 16;
    while (slots < 2 * reads.size())
        slots *= 2;
    std::vector<Seen> table(slots);
    const auto seen_of = [&](const InputRead& r) -> Seen& {
        const auto h = std::hash<std::string_view>{}(r.key);
        for (auto at = h & (slots - 1);; at = (at + 1) & (slots - 1)) {
            auto& e = table[at];
            if (e.read == kNone) {
                e.hash = h;
                e.read = static_cast<std::uint32_t>(&r - reads.data());
                return e;
            }
            if (e.hash == h && reads[e.read].key == r.key) return e;
        }
    };
    const auto append = [](Chain& c, std::vector<std::uint32_t>& next, std::uint32_t r) {
        if (c.last == kNone)
            c.first = r;
        else
            next[c.last] = r;
        c.last = r;
    };
    const auto layout_of = [&](const InputRead& r) -> const TensorLayout& {
        return plan.statements[r.statement].operands[r.operand];
    };
    const auto reported = [&](const Seen& s, const TensorLayout& t) {
        for (auto q = s.reported.first; q != kNone; q = next_reported[q])
            if (same_shape(layout_of(reads[q]), t)) return true;
        return false;
    };
    for (const auto& r : reads) {
        const auto& t = layout_of(r);
        const auto at = static_cast<std::uint32_t>(&r - reads.data());
        auto& s = seen_of(r);
        // Another shape than an earlier read: an error where both reads reach an output (a
        // read whose value is overwritten unread is a view of the input's elements that
        // nothing differentiates through).
        bool other_shape = false;
        for (auto q = s.layouts.first; q != kNone && !other_shape; q = next_layout[q])
            other_shape = !same_shape(layout_of(reads[q]), t);
        if (other_shape && !reported(s, t)) {
            if (live.empty()) live = reaching_outputs(plan, statements);
            // The first earlier read that reaches an output with another shape, unless one
            // with this shape did too (then this shape was reported or accepted there).
            const InputRead* other = nullptr;
            if (live[r.statement])
                for (const auto& q : reads) {
                    if (&q == &r) break;
                    if (q.key != r.key || !live[q.statement]) continue;
                    if (same_shape(layout_of(q), t)) {
                        other = nullptr;
                        break;
                    }
                    if (!other) other = &q;
                }
            if (other) {
                append(s.reported, next_reported, at);
                const auto& o = layout_of(*other);
                ctx.diag(Severity::Error, Code::S106, r.ref->range,
                         "input " + r.key + " is read here as " + parser::print(*r.ref) +
                             " of shape " + shape_text(t.global_shape) + ", and at " +
                             position_text(other->ref->range) + " as " +
                             parser::print(*other->ref) + " of shape " +
                             shape_text(o.global_shape) +
                             ": a program input has one shape (both reads reach an output)",
                         "give tensors of different shapes different names");
            }
        }
        // Another layout than an earlier read of this shape: a warning (not where the shape
        // is refused already).
        const InputRead* same_shape_read = nullptr; // the first read of this shape
        bool known = false;
        for (auto q = s.layouts.first; q != kNone; q = next_layout[q])
            if (const auto& l = layout_of(reads[q]); same_shape(l, t)) {
                if (!same_shape_read) same_shape_read = &reads[q];
                known |= same_layout(l, t);
            }
        if (known) continue;
        append(s.layouts, next_layout, at);
        if (!same_shape_read || reported(s, t)) continue;
        const auto& was = layout_of(*same_shape_read);
        ctx.diag(Severity::Warning, Code::S217, r.ref->range,
                 "input " + r.key + " is read here as " + parser::print(*r.ref) + " (" +
                     placements_text(t.placements, &plan.mesh) + "), and at " +
                     position_text(same_shape_read->ref->range) + " as " +
                     parser::print(*same_shape_read->ref) + " (" +
                     placements_text(was.placements, &plan.mesh) +
                     "): the program needs it in both layouts, and no redistribution between "
                     "them is priced",
                 "read it in one layout, or redistribute it once in a statement of its own");
    }
}

/// Pipeline parallelism (`repeat l_{pp}=N microbatches=M schedule=1f1b`): the block's axis,
/// stages, micro-batches and schedule, with the positioned errors of a bad layer index.
void pipeline_of(Context& ctx, const ast::RepeatDecl& rp, const ast::SourceRange& line, bool small,
                 RepeatBlock& block) {
    block.microbatches = std::max<std::int64_t>(rp.microbatches, 1);
    if (rp.index.axes.empty()) {
        if (rp.microbatches > 0 || !rp.schedule.empty())
            ctx.diag(Severity::Error, Code::S156, line,
                     "micro-batches and a schedule describe a pipeline, and the layer index " +
                         block.index + " is not sharded over a mesh axis",
                     "shard the layers over the pipeline's axis, as in 'repeat " + block.index +
                         "_{pp}=" + std::to_string(rp.count) + "', or drop the options");
        return;
    }
    std::vector<int> axes;
    for (const auto& a : rp.index.axes) {
        const auto k = ctx.resolve_axis(a);
        if (k.empty()) return; // reported
        for (int x : k)
            axes.push_back(x);
    }
    if (axes.size() != 1) {
        ctx.diag(Severity::Error, Code::S154, rp.index.range,
                 "the layers of a pipeline are sharded over one mesh axis, and '" +
                     parser::print(rp.index) + "' names " + std::to_string(axes.size()),
                 "name one axis, as in 'repeat " + block.index +
                     "_{pp}=" + std::to_string(rp.count) + "'");
        return;
    }
    const std::int64_t p = ctx.axis_size(axes[0]);
    if (rp.count % p != 0) {
        ctx.diag(Severity::Error, Code::S150, rp.index.range,
                 std::to_string(rp.count) + " layers do not divide into the " + std::to_string(p) +
                     " stages of mesh axis " + ctx.axis_name(axes[0]),
                 "make the number of layers a multiple of " + std::to_string(p));
        return;
    }
    block.axis = axes[0];
    block.stages = p;
    block.schedule = rp.schedule.empty() ? "1f1b" : rp.schedule;
    // At small sizes one layer per stage (each stage still runs, and every boundary sends).
    if (small) block.count = p;
}

/// The device at `coords` (row-major over the mesh axes).
std::int64_t device_at(const Mesh& mesh, const std::vector<std::int64_t>& coords) {
    return mesh.device_at(row_major_position(
        mesh.axes.size(), [&](std::size_t k) { return mesh.axes[k].size; }, coords));
}

/// The stage-to-stage send of carried tensor `tensor`, stored as `stored` by the body: every
/// device of stage k sends its block (one micro-batch) to the device of stage k+1 at the same
/// other coordinates (reverse: k+1 to k). See RepeatBlock::sends.
Step pipeline_send(const Context& ctx, const RepeatBlock& block, const std::string& tensor,
                   const TensorLayout& stored) {
    Step st;
    st.kind = StepKind::Permute;
    st.mesh_axes = {block.axis};
    st.tensor = tensor;
    st.op = OpKind::None;
    const auto& mesh = ctx.mesh;
    double elements = 1;
    for (auto e : stored.local_shape)
        elements *= static_cast<double>(e);
    auto bytes = ctx.tensor_bytes.find(tensor);
    st.cost.elem_bytes = bytes != ctx.tensor_bytes.end() ? bytes->second : ctx.dtype_bytes;
    st.cost.bytes_per_device = elements * st.cost.elem_bytes /
                               static_cast<double>(std::max<std::int64_t>(block.microbatches, 1));
    if (block.stages > 1) {
        const auto timing = collective_timing(StepKind::Permute, 2, st.cost.bytes_per_device,
                                              ctx.links.at(static_cast<std::size_t>(block.axis)));
        st.cost.time_s = timing.time_s;
        st.cost.protocol = timing.protocol;
    }
    const auto pp = static_cast<std::size_t>(block.axis);
    std::vector<std::int64_t> c(mesh.axes.size(), 0);
    const auto n = mesh.device_count();
    for (std::int64_t d = 0; d < n; ++d) {
        row_major_coords(
            mesh.axes.size(), [&](std::size_t k) { return mesh.axes[k].size; }, d, c);
        if (c[pp] + 1 >= block.stages) continue;
        auto to = c;
        ++to[pp];
        const auto a = device_at(mesh, c), b = device_at(mesh, to);
        st.pairs.emplace_back(block.reverse ? b : a, block.reverse ? a : b);
    }
    std::sort(st.pairs.begin(), st.pairs.end());
    st.text.reason = "stage-to-stage send of " + tensor + ", one micro-batch of " +
                     std::to_string(block.microbatches) + ", after the last layer of each stage (" +
                     (block.reverse ? "stage k+1 to k" : "stage k to k+1") + ")";
    return st;
}

/// A pipelined body's tensors are not sharded over the pipeline's axis: the axis holds the
/// layers (S155, once per statement).
void check_pipelined_body(Context& ctx, const Plan& plan, const RepeatBlock& block) {
    const auto pp = static_cast<std::size_t>(block.axis);
    for (std::size_t j = block.first; j < block.last; ++j) {
        const auto& sp = plan.statements[j];
        std::vector<const TensorLayout*> layouts{&sp.result};
        for (const auto& op : sp.operands)
            layouts.push_back(&op);
        for (const auto* l : layouts) {
            if (pp >= l->placements.size() || l->placements[pp].kind == Placement::Kind::Replicate)
                continue;
            ctx.diag(Severity::Error, Code::S155, sp.range,
                     l->tensor + " is " + l->placements[pp].text() + " over mesh axis " +
                         ctx.axis_name(block.axis) + ", which holds the pipeline's stages (the " +
                         block.index + " index of line " + std::to_string(block.range.line) + ")",
                     "use another mesh axis for the body's tensors: each stage holds whole "
                     "layers");
            break;
        }
    }
}

/// Completes each repeat block (its per-layer parameters and stored tensors) and checks that
/// its layers can run one after another as the one checked layer: a tensor a layer reads
/// before the body stores it is carried from the layer before, so it must exist before the
/// repeat and leave the body in the layout it had there. A reverse block needs a forward one
/// over the same index and count before it.
void check_repeats(Context& ctx, Plan& plan, const std::unordered_set<std::string>& defined) {
    for (std::size_t b = 0; b < plan.repeats.size(); ++b) {
        auto& block = plan.repeats[b];
        std::set<std::string> params, defines;
        for (std::size_t j = block.first; j < block.last; ++j) {
            const auto& sp = plan.statements[j];
            for (const auto& v : sp.values)
                if (!v.load.empty() && !defined.count(v.load)) params.insert(v.load);
            if (sp.assign == Assign::Accumulate && !defined.count(sp.target))
                params.insert(sp.target);
            for (const auto& [name, layout] : sp.stores())
                defines.insert(name);
        }
        block.parameters.assign(params.begin(), params.end());
        block.defines.assign(defines.begin(), defines.end());
        if (block.reverse) {
            for (std::size_t a = b; a-- > 0;) {
                const auto& f = plan.repeats[a];
                const bool taken = std::any_of(
                    plan.repeats.begin(), plan.repeats.begin() + static_cast<long>(b),
                    [&](const RepeatBlock& r) { return r.forward == static_cast<int>(a); });
                if (!f.reverse && f.index == block.index && f.count == block.count && !taken) {
                    block.forward = static_cast<int>(a);
                    break;
                }
            }
            if (block.forward < 0)
                ctx.diag(Severity::Error, Code::S153, block.range,
                         "a reverse repeat reads the layers of an earlier repeat over " +
                             block.index + " with " + std::to_string(block.count) +
                             " layers, and there is none (that another reverse repeat does not "
                             "read)",
                         "write the forward 'repeat " + block.index + "=" +
                             std::to_string(block.count) + "' block first, or drop 'reverse'");
        }
        // Carried tensors: read in the body before the body stores them.
        std::set<std::string> stored, reported;
        for (std::size_t j = block.first; j < block.last; ++j) {
            const auto& sp = plan.statements[j];
            std::vector<std::string> reads;
            for (const auto& v : sp.values)
                if (!v.load.empty()) reads.push_back(v.load);
            if (sp.assign != Assign::Define) reads.push_back(sp.target);
            for (const auto& r : reads) {
                if (stored.count(r) || !defines.count(r) || !reported.insert(r).second) continue;
                // The layout it enters with: the last store before the repeat.
                const auto last_store = [&](std::size_t from, std::size_t to) {
                    std::pair<const StatementPlan*, const TensorLayout*> out{nullptr, nullptr};
                    for (std::size_t k = from; k < to; ++k)
                        for (const auto& [name, layout] : plan.statements[k].stores())
                            if (name == r) out = {&plan.statements[k], layout};
                    return out;
                };
                const auto [before, before_layout] = last_store(0, block.first);
                const auto [after, after_layout] = last_store(block.first, block.last);
                if (!before) {
                    ctx.diag(Severity::Error, Code::S151, sp.range,
                             "each layer reads " + r +
                                 " before the body stores it, so the first layer reads a program "
                                 "input and the next ones the layer before's " +
                                 r,
                             "define " + r + " before the repeat (the first layer's input)");
                } else if (after && !same_layout(*before_layout, *after_layout)) {
                    ctx.diag(Severity::Error, Code::S152, after->range,
                             "the layer stores " + r + " as " +
                                 placements_text(after_layout->placements, &plan.mesh) +
                                 ", but it enters the repeat as " +
                                 placements_text(before_layout->placements, &plan.mesh) +
                                 " (line " + std::to_string(before->range.line) +
                                 "): the next layer would not run as checked",
                             "store " + r + " in the layout it enters with");
                }
                // Pipelined: the carried tensor crosses each stage boundary.
                if (before && after && block.pipelined())
                    block.sends.push_back(pipeline_send(ctx, block, r, *after_layout));
            }
            for (const auto& [name, layout] : sp.stores())
                stored.insert(name);
        }
        if (block.pipelined()) check_pipelined_body(ctx, plan, block);
    }
}

Plan check_program(const ast::Program& program, const CheckOptions& options,
                   CheckCache::Impl* cache) {
    Plan plan;
    Context ctx;
    ctx.diagnostics = &plan.diagnostics;
    ctx.strict = options.strict;
    ctx.small_defaults = options.small_defaults;
    declare(ctx, program, options);
    infer_ranges(ctx, program);
    check_splits(ctx, program);
    ctx.freeze_ranges();
    plan.mesh = ctx.mesh;
    // An empty device list means the identity order (the mesh may be large).
    plan.dtype = ctx.dtype;
    plan.hardware = std::string(ctx.hw->name);
    plan.training = training_of(program);

    // Room for every equation and chain up front: moving a 100k-statement plan list on each
    // growth cost more than counting.
    std::size_t planned_count = 0;
    for (const auto& item : program.items)
        if (const auto* s = std::get_if<ast::Statement>(&item))
            planned_count += std::holds_alternative<ast::Equation>(s->node) ||
                             std::holds_alternative<ast::Chain>(s->node);
    plan.statements.reserve(planned_count);
    Defined defined;
    defined.reserve(planned_count);
    const std::string context = cache ? context_key(ctx, options) : std::string();
    StatementPlan* last = nullptr;
    bool last_failed = false; // the statement before an `expect` could not be planned
    std::vector<std::vector<std::string>> last_steps; // per chain step collectives
    std::vector<InputRead> input_reads;               // reads of names not defined before
    std::unordered_set<std::string> chain_steps;      // names a chain's inner steps write
    std::vector<const ast::Statement*> planned_asts;  // per plan statement
    planned_asts.reserve(planned_count);
    FlatSet<IndexKey> examined; // indices the default-range note has looked at
    // The same for unprimed one-letter indices (most), by their byte: a bit test instead of
    // building a key and searching the set for every index of every statement.
    std::bitset<256> examined_letters;

    std::optional<RepeatBlock> block; // the repeat being read
    RunningCounts counts;             // the program's, for S502
    for (const auto& item : program.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        if (!s) continue;
        if (const auto* rp = std::get_if<ast::RepeatDecl>(&s->node)) {
            block = RepeatBlock{};
            block->index = IndexId{rp->index.name, rp->index.primes}.text();
            // At small sizes (`exec --small`, which ignores `dim` lines), two layers: enough
            // to run a carried tensor and the per-layer values through a second layer.
            block->count = options.ignore_dims ? std::min<std::int64_t>(rp->count, 2) : rp->count;
            pipeline_of(ctx, *rp, s->range, options.ignore_dims, *block);
            block->reverse = rp->reverse;
            block->first = plan.statements.size();
            block->range = s->range;
            continue;
        }
        if (std::holds_alternative<ast::EndDecl>(s->node)) {
            if (block) {
                block->last = plan.statements.size();
                plan.repeats.push_back(std::move(*block));
            }
            block.reset();
            continue;
        }
        if (const auto* ex = std::get_if<ast::Expect>(&s->node)) {
            // Expectations describe the plans at the declared sizes.
            if (last_failed || options.ignore_dims)
                continue; // its errors are reported; nothing to compare against
            if (!last) {
                ctx.diag(Severity::Error, Code::S300, s->range,
                         "an expectation with no statement before it",
                         "put 'expect ...' right after the statement it describes");
                continue;
            }
            std::vector<std::string> want;
            const auto have_all = collectives_of(plan.mesh, *last);
            bool ok = ex->collectives.size() == have_all.size();
            for (std::size_t i = 0; i < ex->collectives.size(); ++i) {
                const auto& c = ex->collectives[i];
                std::string axes;
                std::vector<int> ks;
                for (const auto& a : c.axes)
                    for (int k : ctx.resolve_axis(a, false))
                        ks.push_back(k);
                for (int k : ks)
                    axes += (axes.empty() ? "" : ",") + ctx.axis_name(k);
                const std::string name(collective_name(c.kind));
                want.push_back(c.axes.empty() ? name : name + "(" + axes + ")");
                if (ok) {
                    const auto& have = have_all[i];
                    ok = c.axes.empty() ? have.rfind(name + "(", 0) == 0 : have == want.back();
                }
            }
            if (!ok) {
                ctx.diag(Severity::Error, Code::S301, s->range,
                         "expected " + join_or_none(want) + ", but the plan of line " +
                             std::to_string(last->range.line) + " has " + join_or_none(have_all),
                         "correct the expectation to 'expect " + join_or_none(have_all) +
                             "', or the notation");
            }
            continue;
        }
        const auto* eq = std::get_if<ast::Equation>(&s->node);
        const auto* ch = std::get_if<ast::Chain>(&s->node);
        if (!eq && !ch) continue;

        // The plan: searched, or reused from the cache when nothing it depends on changed.
        std::string source =
            options.text.size() >= s->range.offset + s->range.length && s->range.length > 0
                ? std::string(options.text.substr(s->range.offset, s->range.length))
                : parser::print(*s);
        std::string pretty = parser::print(*s, {true});
        // Planned in place, at the end of the list (room was reserved): a plan's layouts are
        // inline, and moving it there copied them element by element. Dropped if it fails.
        StatementPlan& sp = plan.statements.emplace_back();
        Value result;
        std::vector<Value> moved_also;
        const PlanOut out{sp, result, moved_also};
        if (cache) {
            auto plan_one = [&] {
                return plan_statement(ctx, defined, *s, source, pretty, options, plan.diagnostics,
                                      out);
            };
            last_failed = !cached_plan(*cache, context, defined, *s, source, pretty,
                                       plan.diagnostics, out, plan_one);
        } else {
            // Without a cache the texts are read no more: the plan takes them.
            last_failed = !plan_statement(ctx, defined, *s, std::move(source), std::move(pretty),
                                          options, plan.diagnostics, out);
        }
        // Sizes the cost model cannot count (ranges that multiply out past a double): no
        // plan, as for any other statement in error, so that nothing prints inf or NaN.
        if (!last_failed) {
            const double repeat = block ? static_cast<double>(block->count) : 1.0;
            bool program_wide = false;
            const auto [what, count] = counts.add(sp, repeat, program_wide);
            if (!what.empty()) {
                last_failed = true;
                ctx.diag(Severity::Error, Code::S502, s->range,
                         std::string(program_wide ? "the program's " : "this statement's ") +
                             std::string(what) + ": " + count_text(count) +
                             (program_wide ? " with this statement" : "") +
                             (repeat > 1 ? " (repeated " + std::to_string(block->count) + " times)"
                                         : std::string()) +
                             ", past what the cost model counts (1e300)",
                         "declare smaller ranges ('dim'): its indices' ranges multiply out "
                         "past what a double holds");
            }
        }
        if (last_failed) {
            plan.statements.pop_back();
            continue;
        }
        const std::size_t index = plan.statements.size() - 1; // this statement's
        sp.range = s->range;
        if (cache && sp.source != source) sp.source = source; // the planner's, unless cached
        // Ranges nobody gave: one note per statement, each index named once per program.
        std::vector<std::string> defaulted;
        // Each index is looked up once per program (`examined`): a second occurrence can add
        // nothing, as the note names an index once. The lookups in the range maps cost more
        // than the rest of the note's work on every index of every statement.
        auto note_defaults = [&](const ast::TensorRef& r) {
            for (const auto& d : r.dims)
                for (const auto& p : d.parts) {
                    if (p.primes == 0 && p.name.size() == 1) {
                        const auto bit = static_cast<unsigned char>(p.name.front());
                        if (examined_letters[bit]) continue;
                        examined_letters[bit] = true;
                    } else {
                        const auto key = key_of(p); // an id is built only for a new index
                        if (examined.count(key)) continue;
                        examined.insert(key);
                    }
                    IndexId id{p.name, p.primes};
                    if ((!ctx.has_range(id) || origin_is_default(ctx, id)) &&
                        ctx.defaulted.insert(id).second)
                        defaulted.push_back(id.text());
                }
        };
        ast::for_each_ref(*s, note_defaults);
        if (!defaulted.empty()) {
            std::string names, example;
            for (const auto& n : defaulted) {
                names += (names.empty() ? "" : ", ") + n;
                example += " " + n + "=4096";
            }
            ctx.diag(Severity::Note, Code::S501, s->range,
                     std::string(defaulted.size() == 1 ? "index " : "indices ") + names +
                         (defaulted.size() == 1 ? " has" : " have") + " no declared range; " +
                         (ctx.small_defaults ? std::string("small defaults that every sharding "
                                                           "divides are used")
                                             : "costs assume " + std::to_string(kDefaultRange)),
                     "declare the ranges, e.g. 'dim" + example + "'");
        }
        // Reads of names no earlier statement defined (the operands are the right-hand
        // side's tensor occurrences in order, or a chain's start and its steps).
        if (sp.operands.size() > 0) {
            auto note_read = [&](const ast::TensorRef& r, std::size_t operand) {
                auto k = parser::tensor_key(r.name, r.label);
                if (!defined.count(k) && operand < sp.operands.size()) {
                    // Filled in place: a temporary read moved in cost a string move and its
                    // destruction per read.
                    auto& in = input_reads.emplace_back();
                    in.key = std::move(k);
                    in.ref = &r;
                    in.statement = index;
                    in.operand = operand;
                }
            };
            if (eq) {
                std::size_t operand = 0;
                ast::for_each_ref(eq->rhs,
                                  [&](const ast::TensorRef& r) { note_read(r, operand++); });
            } else {
                // Each moved factor's first occurrence is an operand, in written order.
                const auto first = ast::chain_side(ch->from, ch->with, ch->moved);
                std::size_t operand = 0;
                for (std::size_t p : ast::chain_moved_positions(*ch))
                    note_read(*first[p], operand++);
                for (std::size_t k = 0; k + 1 < ch->steps.size(); ++k)
                    chain_steps.insert(
                        parser::tensor_key(ch->steps[k].to.name, ch->steps[k].to.label));
            }
        }
        // Record the definition (for later uses) and the plan.
        const std::string key =
            eq ? parser::tensor_key(eq->lhs.name, eq->lhs.label)
               : parser::tensor_key(ch->steps.back().to.name, ch->steps.back().to.label);
        if (eq && eq->op != ast::AssignOp::Define && !defined.count(key))
            ctx.diag(Severity::Note, Code::S131, eq->lhs.range,
                     std::string(eq->op == ast::AssignOp::Update ? "':='" : "'+='") + " updates " +
                         key +
                         ", which no earlier statement defines: it is a program input, as written");
        defined[key] = std::move(result);
        for (auto& v : moved_also) // a chain of products' other moved factors
            defined[v.name] = std::move(v);
        sp.target = key;
        if (eq) sp.assign = eq->op;
        if (block) sp.repeat = block->count;
        planned_asts.push_back(s);
        last = &plan.statements.back();
    }
    // The names check_repeats reads, only where there is a repeat block (a set node per
    // defined tensor otherwise, for nothing).
    if (!plan.repeats.empty())
        for (const auto& [k, v] : defined)
            chain_steps.insert(k);
    if (!input_reads.empty()) check_inputs(ctx, plan, input_reads, planned_asts);
    check_repeats(ctx, plan, chain_steps);
    return plan;
}

} // namespace

Plan check(const ast::Program& program, const CheckOptions& options) {
    return check_program(program, options, nullptr);
}

Plan check(const ast::Program& program, const CheckOptions& options, CheckCache& cache) {
    auto& impl = *cache.impl_;
    ++impl.generation;
    impl.hits = 0;
    auto plan = check_program(program, options, &impl);
    std::erase_if(impl.entries,
                  [&](const auto& e) { return e.second.generation != impl.generation; });
    return plan;
}

} // namespace shardscope::semantics
