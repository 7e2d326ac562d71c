// The checker: mesh and ranges from declarations, per-axis placement inference for every
// tensor occurrence and intermediate, collectives, costs, and the Plan (NOTATION.md 5-8).
#include "checker.hpp"

#include "cost.hpp"
#include "flat.hpp"
#include "report.hpp"

#include "parser/functions.hpp"
#include "parser/printer.hpp"
#include "parser/visit.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <unordered_map>

namespace shardscope::semantics {

namespace {

using Kind = Placement::Kind;
using IndexSet = FlatSet<IndexId>;

constexpr std::int64_t kDefaultRange = 1024;

/// a·b, saturating: ranges come from the user and their products must not overflow.
std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<std::int64_t>::max() : r;
}
constexpr int kMaxPlans = 256;

IndexId id_of(const ast::Index& ix) {
    return {ix.name, ix.primes};
}

// =============================================================================================
// Program-wide facts: mesh, ranges, splits, types, hardware.

struct Value;

struct Context {
    /// Tensor occurrences as written: history-free, so computed once per check (filled by
    /// reporting runs only, so that no diagnostic is skipped).
    std::unordered_map<const ast::TensorRef*, std::unique_ptr<Value>> written_cache;
    Mesh mesh;
    bool has_mesh = false;
    FlatMap<IndexId, std::int64_t> ranges;       ///< declared or inferred
    std::map<IndexId, std::string> range_origin; ///< how an inferred range was found
    std::map<IndexId, std::vector<IndexId>> splits;
    std::string dtype = "f32";
    int dtype_bytes = 4;
    std::map<std::string, int> tensor_bytes; ///< per-tensor element size (`tensor x : bf16`)
    const Hardware* hw = nullptr;
    std::vector<Link> links;
    std::map<std::string, ast::FunctionKind> functions;
    bool strict = false;
    /// Undeclared ranges default small (for the executor): twice the least common multiple
    /// of the device counts the index is sharded over, so every sharding divides evenly.
    bool small_defaults = false;
    FlatMap<IndexId, std::int64_t> shard_lcm; ///< per index name (primes 0)
    std::vector<Diagnostic>* diagnostics = nullptr;
    std::set<IndexId> defaulted;                  ///< ranges that took the default (noted once)
    std::set<IndexId> conflicts;                  ///< ranges already reported as conflicting
    std::map<IndexId, ast::SourceRange> split_at; ///< where each split is declared

    void diag(Severity s, std::string code, const ast::SourceRange& r, std::string msg,
              std::string fix = {}) const {
        diagnostics->push_back({s, std::move(code), r, std::move(msg), std::move(fix)});
    }

    std::string axis_label(int k) const {
        const auto& a = mesh.axes[static_cast<std::size_t>(k)];
        return a.name == std::to_string(k) ? "axis " + a.name
                                           : "axis " + a.name + " (" + std::to_string(k) + ")";
    }
    std::string axis_name(int k) const { return mesh.axes[static_cast<std::size_t>(k)].name; }
    std::int64_t axis_size(int k) const { return mesh.axes[static_cast<std::size_t>(k)].size; }

    /// Resolves an axis as written: a declared name, a position ("0"), or a run of one-letter
    /// names (`I_{XY}` on a mesh with axes X and Y). Empty on failure (after a diagnostic).
    std::vector<int> resolve_axis(const ast::AxisRef& a, bool report = true) const {
        for (std::size_t k = 0; k < mesh.axes.size(); ++k)
            if (mesh.axes[k].name == a.name) return {static_cast<int>(k)};
        const bool digits =
            !a.name.empty() &&
            std::all_of(a.name.begin(), a.name.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (digits) {
            const auto k = std::stoul(a.name);
            if (k < mesh.axes.size()) return {static_cast<int>(k)};
        } else if (a.name.size() > 1) {
            std::vector<int> out;
            for (char c : a.name) {
                auto one = resolve_axis({std::string(1, c), a.range}, false);
                if (one.empty()) {
                    out.clear();
                    break;
                }
                out.push_back(one[0]);
            }
            if (!out.empty()) return out;
        }
        if (report) {
            if (!has_mesh) {
                diag(Severity::Error, "S100", a.range,
                     "mesh axis '" + a.name + "' is used but no mesh is declared",
                     "declare the mesh first, e.g. 'mesh 4' or 'mesh dp=2 tp=4'");
            } else {
                std::string names;
                for (std::size_t k = 0; k < mesh.axes.size(); ++k)
                    names += (k ? ", " : "") + mesh.axes[k].name;
                diag(Severity::Error, "S102", a.range, "unknown mesh axis '" + a.name + "'",
                     "the mesh has axes " + names);
            }
        }
        return {};
    }

    std::int64_t range(const IndexId& i) const {
        if (auto it = ranges.find(i); it != ranges.end()) return it->second;
        if (auto it = ranges.find({i.name, 0}); it != ranges.end()) return it->second;
        if (small_defaults) {
            auto it = shard_lcm.find({i.name, 0});
            return 2 * (it == shard_lcm.end() ? 1 : it->second);
        }
        return kDefaultRange;
    }

    bool has_range(const IndexId& i) const { return ranges.count(i) || ranges.count({i.name, 0}); }

    int bytes_of(const std::string& tensor) const {
        auto it = tensor_bytes.find(tensor);
        return it == tensor_bytes.end() ? dtype_bytes : it->second;
    }

    ast::FunctionKind function_kind(const std::string& name) const {
        if (const auto* f = find_builtin_function(name)) return f->kind;
        auto it = functions.find(name);
        return it == functions.end() ? ast::FunctionKind::Elementwise : it->second;
    }
};

/// "all-reduce(0)", "all-gather(tp)": a collective step as plans and expectations name it.
std::string collective_text(const Context& ctx, const Step& s) {
    return semantics::collective_text(ctx.mesh, s.kind, s.mesh_axes);
}

// =============================================================================================
// Values: a tensor occurrence or an intermediate, with its sharding.

struct Dim {
    std::vector<IndexId> parts;
    std::string text; ///< as written: "b", "d'", "(r_0 c)"
    bool operator==(const Dim&) const = default;
};

struct Value {
    std::string name;
    std::vector<Dim> dims;
    FlatMap<IndexId, std::vector<int>> sharding; ///< index -> mesh axes, major to minor
    FlatMap<int, std::string> partial;           ///< axis -> "sum" | "max"
    int elem_bytes = 4;
    int id = -1; ///< the value of the statement's data flow (StatementPlan::values)
    bool operator==(const Value&) const = default;

    IndexSet indices() const {
        IndexSet s;
        for (const auto& d : dims)
            s.insert(d.parts.begin(), d.parts.end());
        return s;
    }
    bool has(const IndexId& i) const {
        for (const auto& d : dims)
            if (std::find(d.parts.begin(), d.parts.end(), i) != d.parts.end()) return true;
        return false;
    }
    /// The index sharded on axis k, if any.
    std::optional<IndexId> sharded_on(int k) const {
        for (const auto& [i, axes] : sharding)
            if (std::find(axes.begin(), axes.end(), k) != axes.end()) return i;
        return std::nullopt;
    }
    Placement placement(int k) const {
        Placement p;
        if (auto it = partial.find(k); it != partial.end()) {
            p.kind = Kind::Partial;
            p.reduce = it->second;
        } else if (auto i = sharded_on(k)) {
            p.kind = Kind::Shard;
            p.index = *i;
            for (std::size_t d = 0; d < dims.size(); ++d)
                if (std::find(dims[d].parts.begin(), dims[d].parts.end(), *i) !=
                    dims[d].parts.end())
                    p.dim = static_cast<int>(d);
        }
        return p;
    }
    /// Removes axis k from the sharding of whatever index carries it.
    void unshard(int k) {
        for (auto it = sharding.begin(); it != sharding.end();) {
            auto& axes = it->second;
            axes.erase(std::remove(axes.begin(), axes.end(), k), axes.end());
            it = axes.empty() ? sharding.erase(it) : std::next(it);
        }
    }
};

/// A written dimension for display: `r_0`, `d'`, `(r_0 c)`.
std::string dim_text(const ast::Dimension& d) {
    std::string out;
    for (const auto& p : d.parts) {
        if (!out.empty()) out += ' ';
        out += p.name;
        out.append(static_cast<std::size_t>(p.primes), '\'');
        if (p.axes.size() == 1) out += "_" + p.axes[0].name;
        if (p.axes.size() > 1) {
            out += "_{";
            for (std::size_t k = 0; k < p.axes.size(); ++k)
                out += (k ? "," : "") + p.axes[k].name;
            out += "}";
        }
    }
    return d.grouped ? "(" + out + ")" : out;
}

// =============================================================================================
// One statement's evaluation. Deterministic given the choices at its choice points, so the
// search can replay it with every combination.

struct ChoicePoint {
    int options = 1;
    bool alternative = false; ///< an alternative to an implied plan (the implied one is option 0)
};

class Evaluator {
public:
    Evaluator(Context& ctx, const std::map<std::string, Value>& defined, std::vector<int> fixed,
              bool report)
        : ctx_(ctx), defined_(defined), fixed_(std::move(fixed)), report_(report) {}

    std::vector<Step> steps;
    std::vector<ChoicePoint> points;
    std::vector<TensorLayout> operands;
    bool fixed_up = false; ///< a fix was needed (the plan is chosen, not implied)
    bool failed = false;   ///< an error stopped the evaluation
    std::vector<std::string> notes;
    std::vector<ValueInfo> values; ///< the data flow (reporting runs only)
    int result_id = -1;            ///< the value the statement stores

    // ---- diagnostics (only on the reporting run) -------------------------------------------

    void error(std::string code, const ast::SourceRange& r, std::string msg, std::string fix = {}) {
        failed = true;
        if (report_) ctx_.diag(Severity::Error, std::move(code), r, std::move(msg), std::move(fix));
    }
    void warning(std::string code, const ast::SourceRange& r, std::string msg,
                 std::string fix = {}) {
        if (report_)
            ctx_.diag(Severity::Warning, std::move(code), r, std::move(msg), std::move(fix));
    }
    void note(std::string code, const ast::SourceRange& r, std::string msg, std::string fix = {}) {
        if (report_) ctx_.diag(Severity::Note, std::move(code), r, std::move(msg), std::move(fix));
    }

    /// A collective the statement does not imply as written (NOTATION.md section 6, --strict):
    /// an error under --strict; otherwise a note when `note_otherwise` (fixes that the plan
    /// already reports as chosen are not noted twice).
    void not_as_written(std::string code, const ast::SourceRange& at, const std::string& msg,
                        std::string fix, bool note_otherwise) {
        if (ctx_.strict)
            error(std::move(code), at, msg + " (--strict)", std::move(fix));
        else if (note_otherwise)
            note(std::move(code), at, msg);
    }

    int choose(int options, bool alternative) {
        const std::size_t at = points.size();
        points.push_back({options, alternative});
        const int c = at < fixed_.size() ? fixed_[at] : 0;
        return std::clamp(c, 0, options - 1);
    }

    // ---- shapes and bytes -------------------------------------------------------------------

    std::int64_t global_extent(const Dim& d) const {
        std::int64_t n = 1;
        for (const auto& p : d.parts)
            n = sat_mul(n, ctx_.range(p));
        return n;
    }
    /// Devices an index is split over.
    std::int64_t split_count(const Value& v, const IndexId& i) const {
        std::int64_t n = 1;
        if (auto it = v.sharding.find(i); it != v.sharding.end())
            for (int k : it->second)
                n *= ctx_.axis_size(k);
        return n;
    }
    static std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0); }

    std::int64_t local_extent(const Value& v, const Dim& d) const {
        std::int64_t n = 1;
        for (const auto& p : d.parts)
            n = sat_mul(n, ceil_div(ctx_.range(p), split_count(v, p)));
        return n;
    }
    double local_elements(const Value& v) const {
        double n = 1;
        for (const auto& d : v.dims)
            n *= static_cast<double>(local_extent(v, d));
        return n;
    }
    double local_bytes(const Value& v) const { return local_elements(v) * v.elem_bytes; }

    TensorLayout layout(const Value& v) const {
        TensorLayout t;
        t.tensor = v.name;
        for (const auto& d : v.dims) {
            t.indices.push_back(d.text);
            t.global_shape.push_back(global_extent(d));
            t.local_shape.push_back(local_extent(v, d));
        }
        for (std::size_t k = 0; k < ctx_.mesh.axes.size(); ++k)
            t.placements.push_back(v.placement(static_cast<int>(k)));
        for (std::size_t d = 0; d < v.dims.size(); ++d)
            for (const auto& p : v.dims[d].parts) {
                auto it = v.sharding.find(p);
                t.atoms.push_back({p, ctx_.range(p),
                                   it == v.sharding.end() ? std::vector<int>{} : it->second,
                                   static_cast<int>(d)});
            }
        return t;
    }

    // ---- the data flow ----------------------------------------------------------------------

    /// A new value of the data flow with `v`'s layout (recorded on reporting runs only; ids are
    /// the same on every run).
    int new_value(const Value& v, std::string load = {}, std::string constant = {}) {
        if (report_) values.push_back({layout(v), std::move(load), std::move(constant)});
        return value_count_++;
    }
    /// The last step turned value `in` into `v`, a new value.
    void flow(int in, Value& v) {
        auto& s = steps.back();
        s.inputs = {in};
        v.id = new_value(v);
        s.output = v.id;
    }
    /// The last step computes `out` from `ins` with `op`.
    Step& compute(OpKind op, std::vector<int> ins, Value& out) {
        auto& s = steps.back();
        s.op = op;
        s.inputs = std::move(ins);
        out.id = new_value(out);
        s.output = out.id;
        return s;
    }
    /// A tensor occurrence of the statement, as its value was recorded (reporting runs only).
    void record_operand(const Value& v) {
        if (report_) operands.push_back(values[static_cast<std::size_t>(v.id)].layout);
    }
    static std::vector<int> ids_of(const std::vector<Value>& vs) {
        std::vector<int> out;
        for (const auto& v : vs)
            out.push_back(v.id);
        return out;
    }

    // ---- steps ------------------------------------------------------------------------------

    Link link(int k) const { return ctx_.links[static_cast<std::size_t>(k)]; }

    void add_collective(StepKind kind, int k, const Value& v, double group_bytes, double local,
                        std::string reason) {
        Step s;
        s.kind = kind;
        s.mesh_axes = {k};
        s.tensor = v.name;
        const auto n = ctx_.axis_size(k);
        s.bytes_per_device = collective_bytes(kind, n, group_bytes, local);
        s.time_s = collective_time(kind, n, s.bytes_per_device, link(k));
        s.reason = std::move(reason);
        steps.push_back(std::move(s));
    }

    void add_local(StepKind kind, const Value& v, std::string detail, std::string reason,
                   double flops = 0, double bytes_moved = 0, bool matrix = false) {
        Step s;
        s.kind = kind;
        s.tensor = v.name;
        s.detail = std::move(detail);
        s.flops_per_device = flops;
        s.reason = std::move(reason);
        if (kind == StepKind::Compute)
            s.time_s = compute_time(flops, bytes_moved, *ctx_.hw, v.elem_bytes, matrix);
        steps.push_back(std::move(s));
    }

    /// P -> R on axis k.
    void all_reduce(Value& v, int k, const std::string& why) {
        const auto op = v.partial[k];
        const int in = v.id;
        add_collective(StepKind::AllReduce, k, v, local_bytes(v), local_bytes(v),
                       "all-reduce " + v.name + " over " + ctx_.axis_label(k) + " (" + op +
                           "): " + why);
        v.partial.erase(k);
        flow(in, v);
    }
    /// P -> S(i) on axis k.
    void reduce_scatter(Value& v, int k, const IndexId& i, const std::string& why) {
        const int in = v.id;
        add_collective(StepKind::ReduceScatter, k, v, local_bytes(v), local_bytes(v),
                       "reduce-scatter " + v.name + " over " + ctx_.axis_label(k) + " onto " +
                           i.text() + ": " + why);
        v.partial.erase(k);
        v.sharding[i].push_back(k);
        flow(in, v);
    }
    /// S -> R on axis k (and every axis minor to it on the same index, which must go too).
    void all_gather(Value& v, int k, const std::string& why) {
        auto i = v.sharded_on(k);
        if (!i) return;
        auto axes = v.sharding[*i];
        const auto pos = std::find(axes.begin(), axes.end(), k) - axes.begin();
        for (auto a = static_cast<std::ptrdiff_t>(axes.size()) - 1; a >= pos; --a) {
            const int ax = axes[static_cast<std::size_t>(a)];
            const double gathered = local_bytes(v) * static_cast<double>(ctx_.axis_size(ax));
            const int in = v.id;
            add_collective(StepKind::AllGather, ax, v, gathered, local_bytes(v),
                           "all-gather " + v.name + " over " + ctx_.axis_label(ax) + " (unshard " +
                               i->text() + "): " + why);
            v.unshard(ax);
            flow(in, v);
        }
    }
    /// S(i) -> S(j) on axis k.
    void all_to_all(Value& v, int k, const IndexId& j, const std::string& why) {
        auto i = v.sharded_on(k);
        const int in = v.id;
        add_collective(StepKind::AllToAll, k, v, local_bytes(v), local_bytes(v),
                       "all-to-all " + v.name + " over " + ctx_.axis_label(k) + " (" +
                           (i ? i->text() : "?") + " -> " + j.text() + "): " + why);
        v.unshard(k);
        v.sharding[j].push_back(k);
        flow(in, v);
    }
    void slice(Value& v, int k, const IndexId& i, const std::string& why) {
        const int in = v.id;
        v.sharding[i].push_back(k);
        add_local(StepKind::Slice, v, {},
                  "slice " + v.name + " locally along " + i.text() + " over " + ctx_.axis_label(k) +
                      ": " + why);
        flow(in, v);
    }

    std::string temp_name() { return "%" + std::to_string(++temps_); }

    // ---- references -------------------------------------------------------------------------

    /// A tensor occurrence as written (subscripts resolved), without history.
    std::optional<Value> written(const ast::TensorRef& r) {
        if (auto it = ctx_.written_cache.find(&r); it != ctx_.written_cache.end())
            return *it->second;
        auto v = written_uncached(r);
        if (v && report_ && !failed) ctx_.written_cache.emplace(&r, std::make_unique<Value>(*v));
        return v;
    }

    std::optional<Value> written_uncached(const ast::TensorRef& r) {
        Value v;
        v.name = parser::tensor_key(r.name, r.label);
        v.elem_bytes = ctx_.bytes_of(v.name);
        // Which index (or, as nullptr, the partial marker) uses each axis; words only on error.
        std::vector<std::pair<int, const ast::Index*>> owner;
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
            owner.emplace_back(k, ix);
            return true;
        };
        for (const auto& d : r.dims) {
            Dim dim;
            dim.text = dim_text(d);
            for (const auto& p : d.parts) {
                const auto id = id_of(p);
                if (v.has(id) ||
                    std::find(dim.parts.begin(), dim.parts.end(), id) != dim.parts.end()) {
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

    static bool writes_placement(const ast::TensorRef& r) {
        if (!r.partial_axes.empty()) return true;
        for (const auto& d : r.dims)
            for (const auto& p : d.parts)
                if (!p.axes.empty()) return true;
        return false;
    }

    /// A use on the right-hand side: inherits or requests the placement of an earlier
    /// definition (NOTATION.md section 6, across statements).
    std::optional<Value> use(const ast::TensorRef& r) {
        auto v = written(r);
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
            // The definition's layout, in this occurrence's index names (by position).
            Value have = *v;
            have.sharding.clear();
            have.partial = def.partial;
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
                        moved += (moved.empty() ? "" : ", ") +
                                 std::string(step_kind_name(steps[s].kind));
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
        v->id = new_value(*v, v->name);
        record_operand(*v);
        return v;
    }

    // ---- placement transitions (the left-hand-side table) -----------------------------------

    /// Moves `have` to the placement of `want` (same indices), axis by axis.
    void transition(Value& have, const Value& want, const ast::SourceRange& at,
                    const std::string& why) {
        const int axes = static_cast<int>(ctx_.mesh.axes.size());
        // Gathers and reductions to R first, then slices, scatters and all-to-alls.
        for (int k = 0; k < axes; ++k) {
            const auto from = have.placement(k);
            const auto to = want.placement(k);
            if (from.kind == Kind::Partial && to.kind == Kind::Partial) {
                if (from.reduce != to.reduce) {
                    error("S201", at,
                          "P(" + from.reduce + ") cannot become P(" + to.reduce + ") on " +
                              ctx_.axis_label(k),
                          "reduce it first (all-reduce), then take the " + to.reduce);
                    return;
                }
            } else if (from.kind == Kind::Partial && to.kind == Kind::Replicate) {
                all_reduce(have, k, why);
            } else if (from.kind == Kind::Partial && to.kind == Kind::Shard) {
                if (!have.has(to.index)) {
                    error("S202", at,
                          "cannot reduce-scatter onto " + to.index.text() +
                              ": the value has no such index");
                    return;
                }
                if (auto cur = have.sharded_on(k); cur) have.unshard(k);
                reduce_scatter(have, k, to.index, why);
            } else if (from.kind == Kind::Shard && to.kind == Kind::Partial) {
                error("S200", at,
                      "a tensor sharded on " + ctx_.axis_label(k) + " (along " + from.index.text() +
                          ") cannot become partial (S -> P)",
                      "drop the {U_" + ctx_.axis_name(k) +
                          "} marker, or shard the left-hand side along " + from.index.text());
                return;
            } else if (from.kind == Kind::Replicate && to.kind == Kind::Partial) {
                const int in = have.id;
                have.partial[k] = to.reduce;
                add_local(StepKind::Compute, have, "keep one copy",
                          "R -> P on " + ctx_.axis_label(k) +
                              ": keep one device's copy, zero the others (local)");
                compute(OpKind::KeepOne, {in}, have).mesh_axes = {k};
            } else if (from.kind == Kind::Shard && to.kind == Kind::Replicate) {
                all_gather(have, k, why);
            } else if (from.kind == Kind::Shard && to.kind == Kind::Shard &&
                       !(from.index == to.index)) {
                if (!have.has(to.index)) {
                    error("S202", at,
                          "cannot move the sharding onto " + to.index.text() +
                              ": the value has no such index");
                    return;
                }
                all_to_all(have, k, to.index, why);
            }
        }
        for (int k = 0; k < axes; ++k) {
            const auto from = have.placement(k);
            const auto to = want.placement(k);
            if (from.kind == Kind::Replicate && to.kind == Kind::Shard)
                slice(have, k, to.index, why);
        }
        // Multi-axis indices: the order of axes must match too (major to minor).
        for (const auto& [i, axes_want] : want.sharding) {
            auto it = have.sharding.find(i);
            if (it != have.sharding.end() && it->second != axes_want) {
                std::sort(it->second.begin(), it->second.end());
                auto sorted_want = axes_want;
                std::sort(sorted_want.begin(), sorted_want.end());
                if (it->second == sorted_want) {
                    // Same axes in another order: shards move between devices of the group.
                    std::int64_t n = 1;
                    for (int k : axes_want)
                        n *= ctx_.axis_size(k);
                    Step s;
                    s.kind = StepKind::AllToAll;
                    s.mesh_axes = axes_want;
                    s.tensor = have.name;
                    s.bytes_per_device =
                        collective_bytes(StepKind::AllToAll, n, 0, local_bytes(have));
                    Link slowest = link(axes_want.front());
                    for (int k : axes_want)
                        if (link(k).bytes_per_second < slowest.bytes_per_second) slowest = link(k);
                    s.time_s = collective_time(StepKind::AllToAll, n, s.bytes_per_device, slowest);
                    s.reason = "reorder the mesh axes of " + i.text() + " (major to minor): " + why;
                    steps.push_back(s);
                    const int in = have.id;
                    it->second = axes_want;
                    flow(in, have);
                }
                it->second = axes_want;
            }
        }
    }

    // ---- expressions ------------------------------------------------------------------------

    /// Every index mentioned under `e` (tensor indices and call subscripts).
    static void collect(const ast::Expr& e, IndexSet& out) {
        ast::for_each_index(e, [&](const ast::Index& i) { out.insert(id_of(i)); });
    }

    std::optional<Value> eval(const ast::Expr& e, const IndexSet& outside) {
        if (failed) return std::nullopt;
        return std::visit([&](const auto& n) { return eval_node(n, e, outside); }, e.node);
    }

    /// Evaluates the operands of a product or sum; for each, the indices its siblings use
    /// count as needed outside, so it contracts only what no one else needs.
    std::optional<std::vector<Value>> eval_operands(const std::vector<ast::Expr>& operands,
                                                    const IndexSet& outside) {
        std::vector<IndexSet> idx(operands.size());
        for (std::size_t i = 0; i < operands.size(); ++i)
            collect(operands[i], idx[i]);
        std::vector<Value> ops;
        for (std::size_t i = 0; i < operands.size(); ++i) {
            IndexSet out = outside;
            for (std::size_t j = 0; j < operands.size(); ++j)
                if (j != i) out.insert(idx[j].begin(), idx[j].end());
            auto v = eval(operands[i], out);
            if (!v) return std::nullopt;
            ops.push_back(std::move(*v));
        }
        return ops;
    }

    std::optional<Value> eval_node(const ast::Number& n, const ast::Expr&, const IndexSet&) {
        Value v;
        v.name = "scalar";
        v.elem_bytes = ctx_.dtype_bytes;
        v.id = new_value(v, {}, n.text);
        return v;
    }

    std::optional<Value> eval_node(const ast::TensorRef& r, const ast::Expr&, const IndexSet&) {
        return use(r);
    }

    std::optional<Value> eval_node(const ast::Product& p, const ast::Expr& e,
                                   const IndexSet& outside) {
        auto ops = eval_operands(p.factors, outside);
        if (!ops) return std::nullopt;
        return einsum(*ops, outside, e.range);
    }

    /// Rule 3: when the operands shard different indices on axis k, the operation cannot be
    /// computed locally; keep one index sharded (a choice of the search) and all-gather the
    /// operands that shard another.
    void keep_one_sharded_index(std::vector<Value>& ops, int k, const ast::SourceRange& at,
                                const char* what) {
        std::vector<IndexId> distinct;
        for (const auto& v : ops)
            if (auto i = v.sharded_on(k);
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
            if (auto i = v.sharded_on(k); i && !(*i == keep)) all_gather(v, k, why);
        not_as_written("S212", at, why + ": " + what + " cannot be computed locally",
                       "all-gather one operand over " + ctx_.axis_label(k) + " explicitly", false);
    }

    /// One einsum node (NOTATION.md section 6, rules 1-4).
    std::optional<Value> einsum(std::vector<Value>& ops, const IndexSet& outside,
                                const ast::SourceRange& at) {
        const int axes = static_cast<int>(ctx_.mesh.axes.size());
        for (int k = 0; k < axes; ++k) {
            // Rule 4: a partial operand may meet only replicated operands.
            std::vector<std::size_t> partials;
            std::optional<IndexId> any_sharded;
            for (std::size_t o = 0; o < ops.size(); ++o) {
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
                        "a partial operand may meet only replicated operands on " +
                        ctx_.axis_label(k);
                    if (c == 1)
                        reduce_scatter(v, k, *any_sharded, why);
                    else
                        all_reduce(v, k, why);
                    not_as_written("S211", at,
                                   "partial operand " + v.name + " needs a reduction on " +
                                       ctx_.axis_label(k) + " before this product",
                                   "reduce it in an earlier statement, or write the collective "
                                   "explicitly",
                                   false);
                }
            }
            // Rule 3: two different indices sharded on the same axis.
            keep_one_sharded_index(ops, k, at, "the product");
        }
        // Indices: result keeps those needed outside this product.
        std::vector<IndexId> order;
        IndexSet all;
        for (const auto& v : ops)
            for (const auto& d : v.dims)
                for (const auto& i : d.parts)
                    if (all.insert(i).second) order.push_back(i);
        Value out;
        out.name = temp_name();
        out.elem_bytes = ops.empty() ? ctx_.dtype_bytes : ops.front().elem_bytes;
        for (const auto& i : order)
            if (outside.count(i)) out.dims.push_back({{i}, i.text()});
        // Per index: the operands' axis lists (major to minor) must agree, one being a prefix
        // of the other (the shorter then slices locally). Otherwise keep one list, gather the rest.
        for (const auto& i : order) {
            std::vector<std::vector<int>> lists;
            for (const auto& v : ops)
                if (auto it = v.sharding.find(i);
                    it != v.sharding.end() &&
                    std::find(lists.begin(), lists.end(), it->second) == lists.end())
                    lists.push_back(it->second);
            auto is_prefix = [](const std::vector<int>& a, const std::vector<int>& b) {
                return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
            };
            std::vector<int> target;
            for (const auto& l : lists)
                if (l.size() > target.size()) target = l;
            bool agree = true;
            for (const auto& l : lists)
                agree &= is_prefix(l, target);
            if (!agree) {
                fixed_up = true;
                target =
                    lists[static_cast<std::size_t>(choose(static_cast<int>(lists.size()), false))];
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
            std::optional<IndexId> sharded;
            for (const auto& v : ops)
                if (auto i = v.sharded_on(k)) sharded = i;
            for (const auto& v : ops)
                if (v.partial.count(k)) out.partial[k] = v.partial.at(k);
            if (!sharded) continue;
            const bool kept = outside.count(*sharded) > 0;
            if (!kept) {
                // Contraction over a sharded index: P(sum). Gathering first is the alternative.
                const int c = choose(2, true);
                if (c == 1) {
                    for (auto& v : ops)
                        if (v.sharded_on(k))
                            all_gather(v, k,
                                       "alternative: gather before contracting " + sharded->text());
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
                sharded |= v.sharded_on(k).has_value();
            bool partial_operand = false;
            for (const auto& v : ops)
                partial_operand |= v.partial.count(k) > 0;
            if (!sharded && !partial_operand) out.partial.erase(k);
        }
        // Operands holding a sharded index on fewer axes slice locally to the full list (rule 2).
        for (const auto& i : order) {
            std::vector<int> target;
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
                              "slice " + v.name + " locally along " + i.text() + " over " +
                                  ctx_.axis_label(k) + " (free)");
                    mine.push_back(k);
                    flow(in, v);
                }
            }
            if (outside.count(i)) out.sharding[i] = target;
        }
        // Local compute: pairwise contraction, greedily the cheapest pair first.
        double flops = 0, moved = 0;
        std::vector<IndexSet> live;
        std::string spec;
        for (const auto& v : ops) {
            live.push_back(v.indices());
            moved += local_bytes(v);
            std::string s;
            for (const auto& d : v.dims)
                s += (s.empty() ? "" : " ") + d.text;
            spec += (spec.empty() ? "" : ", ") + s;
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
        while (live.size() > 1) {
            double best = -1;
            std::size_t ba = 0, bb = 1;
            for (std::size_t a = 0; a < live.size(); ++a)
                for (std::size_t b = a + 1; b < live.size(); ++b) {
                    IndexSet u = live[a];
                    u.insert(live[b].begin(), live[b].end());
                    double f = 2;
                    for (const auto& i : u)
                        f *= local_ext(i);
                    if (best < 0 || f < best) best = f, ba = a, bb = b;
                }
            IndexSet u = live[ba];
            u.insert(live[bb].begin(), live[bb].end());
            flops += best;
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
        }
        std::string out_spec;
        for (const auto& d : out.dims)
            out_spec += (out_spec.empty() ? "" : " ") + d.text;
        moved += local_bytes(out);
        add_local(StepKind::Compute, out, spec + " -> " + out_spec, "local einsum", flops, moved,
                  true);
        compute(OpKind::Einsum, ids_of(ops), out);
        return out;
    }

    std::optional<Value> eval_node(const ast::Call& c, const ast::Expr& e,
                                   const IndexSet& outside) {
        IndexSet inner = outside;
        for (const auto& i : c.indices)
            inner.insert(id_of(i));
        auto arg = eval(*c.arg, inner);
        if (!arg) return std::nullopt;
        Value v = std::move(*arg);
        const auto kind = ctx_.function_kind(c.function);
        const int axes = static_cast<int>(ctx_.mesh.axes.size());
        const auto elems = local_elements(v);
        auto finish = [&](const std::string& detail, OpKind op = OpKind::Function) {
            Value out = v;
            out.name = temp_name();
            add_local(StepKind::Compute, out, detail, c.function + " (local)", elems,
                      2 * local_bytes(v));
            auto& s = compute(op, {v.id}, out);
            s.function = c.function;
            if (op == OpKind::Softmax) s.index = id_of(c.indices[0]);
            return out;
        };
        switch (kind) {
        case ast::FunctionKind::Linear:
            return finish(c.function, OpKind::Linear);
        case ast::FunctionKind::Elementwise:
            for (int k = 0; k < axes; ++k)
                if (v.partial.count(k)) {
                    const auto msg = "the input of " + c.function + " is partial over " +
                                     ctx_.axis_label(k) + "; " + c.function +
                                     " is non-linear, so it is all-reduced first";
                    not_as_written("S214", e.range, msg,
                                   "reduce the input in an earlier statement, or write AllReduce "
                                   "explicitly",
                                   true);
                    all_reduce(v, k, c.function + " is non-linear and needs a complete input");
                }
            return finish(c.function);
        case ast::FunctionKind::Reduction: {
            if (c.indices.empty()) {
                error("S120", e.range,
                      c.function + " needs the index it reduces over, as in " + c.function +
                          "_s(x)");
                return std::nullopt;
            }
            const std::string op = c.function == "max" ? "max" : "sum";
            for (int k = 0; k < axes; ++k)
                if (auto it = v.partial.find(k); it != v.partial.end() && it->second != op)
                    all_reduce(v, k, c.function + " cannot pass a P(" + it->second + ") input");
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
            add_local(StepKind::Compute, out, c.function, c.function + " over the local shard",
                      elems, local_bytes(v));
            compute(OpKind::Reduce, {v.id}, out).function = c.function;
            return out;
        }
        case ast::FunctionKind::Softmax: {
            for (int k = 0; k < axes; ++k)
                if (v.partial.count(k)) all_reduce(v, k, "softmax needs a complete input");
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
                for (int k : std::vector<int>(it->second)) {
                    if (choice == 0) {
                        // Two small all-reduces of the row statistics (max, then sum).
                        Value stats = v;
                        stats.dims.erase(
                            std::remove_if(stats.dims.begin(), stats.dims.end(),
                                           [&](const Dim& d) {
                                               return std::find(d.parts.begin(), d.parts.end(),
                                                                along) != d.parts.end();
                                           }),
                            stats.dims.end());
                        stats.name = v.name + ".max";
                        add_collective(
                            StepKind::AllReduce, k, stats, local_bytes(stats), local_bytes(stats),
                            "all-reduce the row maximum of " + v.name + " over " +
                                ctx_.axis_label(k) + ": softmax along sharded " + along.text());
                        steps.back().inputs = {v.id}; // performed by the softmax step
                        steps.back().function = "max";
                        stats.name = v.name + ".sum";
                        add_collective(
                            StepKind::AllReduce, k, stats, local_bytes(stats), local_bytes(stats),
                            "all-reduce the row sum of " + v.name + " over " + ctx_.axis_label(k) +
                                ": softmax along sharded " + along.text());
                        steps.back().inputs = {v.id};
                        steps.back().function = "sum";
                    } else {
                        all_gather(v, k, "softmax along sharded " + along.text());
                        break;
                    }
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

    /// AllReduce_{r_0}(x), AllGather_{i_0}(x), ReduceScatter_{i_0}(x): written by hand.
    std::optional<Value> explicit_collective(const ast::Call& c, Value v, const ast::Expr& e) {
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
                  c.function + " needs the mesh axes it works over, as in " + c.function +
                      "_{r_0}(x)");
            return std::nullopt;
        }
        const std::string why = "written explicitly";
        for (const auto& target : targets) {
            const IndexId i = target.first; // named: lambdas below capture it (clang 14)
            const int k = target.second;
            if (c.function == "AllReduce") {
                if (v.partial.count(k)) {
                    all_reduce(v, k, why);
                } else if (v.sharded_on(k) && *v.sharded_on(k) == i) {
                    // A sum over a device index: the local sum over this device's chunk,
                    // then the cross-device sum is the all-reduce.
                    IndexSet gone;
                    gone.insert(i);
                    const double elems = local_elements(v);
                    Value out = without(v, gone, "sum");
                    add_local(StepKind::Compute, out, "sum " + i.text(),
                              "sum over the local chunk of " + i.text(), elems, local_bytes(v));
                    compute(OpKind::Reduce, {v.id}, out).function = "sum";
                    v = std::move(out);
                    all_reduce(v, k, why);
                } else {
                    error("S124", e.range,
                          "AllReduce over " + ctx_.axis_label(k) + ", but " + v.name +
                              " is not partial there");
                    return std::nullopt;
                }
            } else if (c.function == "AllGather") {
                if (!v.sharded_on(k)) {
                    error("S124", e.range,
                          "AllGather over " + ctx_.axis_label(k) + ", but " + v.name +
                              " is not sharded there");
                    return std::nullopt;
                }
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

    /// a + b, a - b, a / b: operands agree per axis (broadcast allowed).
    std::optional<Value> combine(std::vector<Value>& ops, bool quotient, const ast::SourceRange& at,
                                 std::vector<bool> negated = {}) {
        const int axes = static_cast<int>(ctx_.mesh.axes.size());
        for (int k = 0; k < axes; ++k) {
            keep_one_sharded_index(ops, k, at, "the operation");
            std::optional<IndexId> sharded;
            for (const auto& v : ops)
                if (auto i = v.sharded_on(k)) sharded = i;
            // Partial operands: P + P -> P; otherwise reduce. A quotient's denominator is
            // reduced; its numerator may stay partial over a replicated denominator.
            std::size_t partial_count = 0;
            for (const auto& v : ops)
                partial_count += v.partial.count(k);
            for (std::size_t o = 0; o < ops.size(); ++o) {
                auto& v = ops[o];
                if (!v.partial.count(k)) continue;
                const bool keep =
                    quotient ? (o == 0 && !sharded) : (partial_count == ops.size() && !sharded);
                if (keep) continue;
                const std::string why = quotient ? "a quotient may be partial only in its "
                                                   "numerator, over a replicated denominator"
                                                 : "partial and non-partial terms cannot be added";
                fixed_up = true;
                not_as_written("S211", at,
                               "partial operand " + v.name + " needs a reduction on " +
                                   ctx_.axis_label(k) + " here",
                               "reduce it in an earlier statement, or write the collective "
                               "explicitly",
                               false);
                if (sharded && v.has(*sharded)) {
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
            if (sharded)
                for (auto& v : ops)
                    if (v.has(*sharded) && !v.sharded_on(k)) {
                        const int in = v.id;
                        v.sharding[*sharded].push_back(k);
                        add_local(StepKind::Slice, v, {},
                                  "slice " + v.name + " locally along " + sharded->text() +
                                      " (free)");
                        flow(in, v);
                    }
        }
        Value out;
        out.name = temp_name();
        out.elem_bytes = ops.front().elem_bytes;
        IndexSet seen;
        for (const auto& v : ops) {
            for (const auto& d : v.dims)
                for (const auto& i : d.parts)
                    if (seen.insert(i).second) {
                        out.dims.push_back({{i}, i.text()});
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
        compute(quotient ? OpKind::Divide : OpKind::Add, ids_of(ops), out).negated =
            quotient ? std::vector<bool>{} : negated;
        return out;
    }

    std::optional<Value> eval_node(const ast::Sum& s, const ast::Expr& e, const IndexSet& outside) {
        auto ops = eval_operands(s.terms, outside);
        if (!ops) return std::nullopt;
        if (ops->size() == 1) {
            // Negation is linear: placements pass through.
            if (s.negated.empty() || !s.negated[0]) return ops->front();
            Value out = ops->front();
            out.name = temp_name();
            add_local(StepKind::Compute, out, "neg", "negation (local)", local_elements(out),
                      2 * local_bytes(out));
            compute(OpKind::Linear, {ops->front().id}, out).function = "neg";
            return out;
        }
        return combine(*ops, false, e.range, s.negated);
    }

    std::optional<Value> eval_node(const ast::Quotient& q, const ast::Expr& e,
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

    // ---- statements -------------------------------------------------------------------------

    /// `v` with the indices in `gone` reduced away (with `op`): a reduced index that was
    /// sharded leaves the result partial over its axes.
    Value without(const Value& v, const IndexSet& gone, const std::string& op) {
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
                nd.text = nd.parts.size() == 1 ? nd.parts[0].text() : d.text;
                out.dims.push_back(nd);
            }
        }
        return out;
    }

    /// Sums away the indices of `v` that the left-hand side does not have.
    void reduce_leftovers(Value& v, const IndexSet& keep) {
        IndexSet gone;
        for (const auto& i : v.indices())
            if (!keep.count(i)) gone.insert(i);
        if (gone.empty()) return;
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
        compute(OpKind::Reduce, {in}, v).function = "sum";
    }

    std::optional<Value> equation(const ast::Equation& eq, const ast::SourceRange& at) {
        auto lhs = written(eq.lhs);
        if (!lhs) return std::nullopt;
        IndexSet outside = lhs->indices();
        auto rhs = eval(eq.rhs, outside);
        if (!rhs) return std::nullopt;
        for (const auto& i : lhs->indices())
            if (!rhs->has(i)) {
                error("S130", eq.lhs.range,
                      "index " + i.text() + " of " + lhs->name +
                          " does not appear on the right-hand side",
                      "every index on the left must come from the right (broadcasting a new index "
                      "is not supported)");
                return std::nullopt;
            }
        reduce_leftovers(*rhs, outside);
        // The left-hand side states the result's placement.
        transition(*rhs, *lhs, at, "the left-hand side asks for it");
        result_id = rhs->id;
        Value result = *lhs;
        result.sharding = lhs->sharding;
        result.partial = lhs->partial;
        return result;
    }

    /// Expands split indices (declared, or learned from groups in the chain) into parts.
    std::vector<IndexId> atoms(const std::vector<Dim>& dims,
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

    std::optional<Value> chain(const ast::Chain& ch, const ast::SourceRange&,
                               std::vector<std::vector<std::string>>& step_collectives) {
        auto cur = use(ch.from);
        if (!cur) return std::nullopt;
        // Splits learned from groups: x_{bsd} -> x_{(rc)sd} says b = (r c).
        std::map<IndexId, std::vector<IndexId>> learned;
        for (const auto& st : ch.steps) {
            auto next = written(st.to);
            if (!next) return std::nullopt;
            if (report_) operands.push_back(layout(*next));
            const auto before = steps.size();
            if (cur->dims.size() == next->dims.size())
                for (std::size_t d = 0; d < cur->dims.size(); ++d) {
                    const auto& a = cur->dims[d].parts;
                    const auto& b = next->dims[d].parts;
                    if (a.size() == 1 && b.size() > 1 &&
                        std::find(b.begin(), b.end(), a[0]) == b.end())
                        learned[a[0]] = b;
                    // Merging a group back (x_{(rc)sd} -> x_{bsd}) says the same.
                    else if (b.size() == 1 && a.size() > 1 &&
                             std::find(a.begin(), a.end(), b[0]) == a.end())
                        learned[b[0]] = a;
                }
            const auto from_atoms = atoms(cur->dims, learned);
            const auto to_atoms = atoms(next->dims, learned);
            if (from_atoms != to_atoms) {
                std::string fa, ta;
                for (const auto& i : from_atoms)
                    fa += i.text();
                for (const auto& i : to_atoms)
                    ta += i.text();
                error(
                    "S140", st.to.range,
                    "this step changes the tensor's indices (" + fa + " -> " + ta +
                        "): a chain may only split, merge or move placements",
                    "declare the split ('split b -> r c') or write the group, as in x_{(r c) s d}");
                return std::nullopt;
            }
            bool reshaped = cur->dims.size() != next->dims.size();
            for (std::size_t d = 0; !reshaped && d < cur->dims.size(); ++d)
                reshaped = cur->dims[d].parts != next->dims[d].parts;
            // Express the current sharding in atoms, then move it to the next layout.
            Value have = *next;
            have.sharding.clear();
            have.partial = cur->partial;
            // A sharded index shards its major atom; in the next layout, that is the index whose
            // own major atom it is (`g` of `(g n)` is `m` once `split m -> g n` merges them).
            auto major_atom = [&](const IndexId& x) {
                std::vector<Dim> one{{{x}, x.text()}};
                auto parts = atoms(one, learned);
                return parts.empty() ? x : parts.front();
            };
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

private:
    Context& ctx_;
    const std::map<std::string, Value>& defined_;
    std::vector<int> fixed_;
    bool report_;
    int temps_ = 0;
    int value_count_ = 0;
};

// =============================================================================================
// Declarations.

void declare(Context& ctx, const ast::Program& program, const CheckOptions& options) {
    std::optional<ast::SourceRange> mesh_at;
    for (const auto& item : program.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        if (!s) continue;
        if (const auto* m = std::get_if<ast::MeshDecl>(&s->node)) {
            if (mesh_at) {
                ctx.diag(Severity::Error, "S001", s->range, "a second mesh declaration",
                         "a program has one mesh; the first is at line " +
                             std::to_string(mesh_at->line));
                continue;
            }
            mesh_at = s->range;
            for (const auto& a : m->axes)
                ctx.mesh.axes.push_back({a.name, a.size});
            ctx.mesh.devices = m->devices;
            ctx.has_mesh = true;
        } else if (const auto* d = std::get_if<ast::DimDecl>(&s->node)) {
            if (options.ignore_dims) continue;
            for (const auto& b : d->bindings) {
                const auto id = id_of(b.index);
                if (auto it = ctx.ranges.find(id); it != ctx.ranges.end() && it->second != b.size)
                    ctx.diag(Severity::Error, "S002", b.index.range,
                             "index " + id.text() + " is declared with range " +
                                 std::to_string(b.size) + " and " + std::to_string(it->second),
                             "declare each range once");
                ctx.ranges[id] = b.size;
                ctx.range_origin[id] = "declared";
            }
        } else if (const auto* sp = std::get_if<ast::SplitDecl>(&s->node)) {
            std::vector<IndexId> parts;
            for (const auto& p : sp->parts)
                parts.push_back(id_of(p));
            ctx.splits[id_of(sp->from)] = parts;
            ctx.split_at[id_of(sp->from)] = s->range;
        } else if (const auto* dt = std::get_if<ast::DtypeDecl>(&s->node)) {
            ctx.dtype = dt->dtype;
            ctx.dtype_bytes = dtype_size(dt->dtype).value_or(4);
        } else if (const auto* td = std::get_if<ast::TensorDecl>(&s->node)) {
            ctx.tensor_bytes[parser::tensor_key(td->name, td->label)] =
                dtype_size(td->dtype).value_or(4);
        } else if (const auto* hw = std::get_if<ast::HwDecl>(&s->node)) {
            if (const auto* h = find_hardware(hw->preset))
                ctx.hw = h;
            else
                ctx.diag(Severity::Error, "S003", s->range,
                         "unknown hardware preset '" + hw->preset + "'",
                         "use one of " + hardware_names());
        } else if (const auto* f = std::get_if<ast::FnDecl>(&s->node)) {
            ctx.functions[f->name] = f->kind;
        }
    }
    if (options.mesh) {
        if (auto m = parse_mesh_spec(*options.mesh)) {
            ctx.mesh = *m;
            ctx.has_mesh = true;
        }
    }
    if (!ctx.hw) ctx.hw = find_hardware("h100");
    for (const auto& a : ctx.mesh.axes)
        (void)a, ctx.links.push_back({ctx.hw->link_bw, ctx.hw->link_latency_s});
    for (const auto& item : program.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        if (!s) continue;
        if (const auto* l = std::get_if<ast::LinkDecl>(&s->node)) {
            for (int k : ctx.resolve_axis(l->axis)) {
                ctx.links[static_cast<std::size_t>(k)].bytes_per_second = l->bytes_per_second;
                if (!l->latency_text.empty())
                    ctx.links[static_cast<std::size_t>(k)].latency_s = l->latency_seconds;
            }
        }
    }
}

/// Range inference: device indices take their axes' size; splits give the missing factor.
void infer_ranges(Context& ctx, const ast::Program& program) {
    auto visit_ref = [&](const ast::TensorRef& r) {
        for (const auto& d : r.dims)
            for (const auto& p : d.parts) {
                if (p.axes.empty()) continue;
                const auto id = id_of(p);
                std::int64_t size = 1;
                std::string axes;
                bool ok = true;
                for (const auto& a : p.axes) {
                    auto ks = ctx.resolve_axis(a, false);
                    if (ks.empty()) ok = false;
                    for (int k : ks) {
                        size = sat_mul(size, ctx.axis_size(k));
                        axes += (axes.empty() ? "" : ",") + ctx.axis_name(k);
                    }
                }
                if (!ok) continue;
                if (ctx.small_defaults) {
                    auto& l = ctx.shard_lcm[{id.name, 0}];
                    l = std::lcm(l == 0 ? 1 : l, size);
                }
                if (auto o = ctx.range_origin.find(id); o != ctx.range_origin.end() &&
                                                        o->second.rfind("device index", 0) == 0 &&
                                                        ctx.range(id) != size) {
                    if (ctx.conflicts.insert(id).second)
                        ctx.diag(Severity::Error, "S005", p.range,
                                 "index " + id.text() +
                                     " has no declared range and is the device index of " +
                                     o->second.substr(16) + " (" + std::to_string(ctx.range(id)) +
                                     ") and of axis " + axes + " (" + std::to_string(size) + ")",
                                 "declare its range with 'dim " + id.text() + "=N'");
                    continue;
                }
                if (ctx.has_range(id)) continue;
                ctx.ranges[id] = size;
                ctx.range_origin[id] = "device index of axis " + axes;
            }
    };
    // A chain that groups an index (x_{bsd} -> x_{(r c) s d}) splits it as a declaration does:
    // the ranges must multiply out.
    auto splits = ctx.splits;
    for (const auto& item : program.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        const auto* ch = s ? std::get_if<ast::Chain>(&s->node) : nullptr;
        if (!ch) continue;
        const ast::TensorRef* cur = &ch->from;
        for (const auto& st : ch->steps) {
            if (cur->dims.size() == st.to.dims.size())
                for (std::size_t d = 0; d < cur->dims.size(); ++d) {
                    const auto& a = cur->dims[d].parts;
                    const auto& b = st.to.dims[d].parts;
                    const auto* one = a.size() == 1 && b.size() > 1   ? &a
                                      : b.size() == 1 && a.size() > 1 ? &b
                                                                      : nullptr;
                    if (!one) continue;
                    const auto& many = one == &a ? b : a;
                    std::vector<IndexId> parts;
                    for (const auto& p : many)
                        parts.push_back(id_of(p));
                    if (std::find(parts.begin(), parts.end(), id_of((*one)[0])) == parts.end())
                        splits.emplace(id_of((*one)[0]), parts);
                }
            cur = &st.to;
        }
    }
    // Splits first where they decide a device index: split s -> r t with r sharded.
    for (int pass = 0; pass < 3; ++pass) {
        for (const auto& item : program.items)
            if (const auto* s = std::get_if<ast::Statement>(&item))
                ast::for_each_ref(*s, visit_ref);
        // Splits: parent = product of parts; one missing part = parent / the others.
        bool changed = true;
        while (changed) {
            changed = false;
            for (const auto& [parent, parts] : splits) {
                std::int64_t known = 1;
                int unknown = 0;
                IndexId missing;
                for (const auto& p : parts) {
                    if (ctx.has_range(p))
                        known = sat_mul(known, ctx.range(p));
                    else
                        ++unknown, missing = p;
                }
                if (unknown == 0 && !ctx.has_range(parent)) {
                    ctx.ranges[parent] = known;
                    ctx.range_origin[parent] = "split";
                    changed = true;
                } else if (unknown == 1 && ctx.has_range(parent)) {
                    const auto whole = ctx.range(parent);
                    if (known <= 0 || whole % known != 0) {
                        if (ctx.conflicts.insert(parent).second)
                            ctx.diag(Severity::Error, "S004", ctx.split_at[parent],
                                     "split of " + parent.text() + "=" + std::to_string(whole) +
                                         ": the other parts multiply to " + std::to_string(known) +
                                         ", which does not divide it",
                                     "choose ranges whose product is " + std::to_string(whole));
                        continue;
                    }
                    ctx.ranges[missing] = whole / known;
                    ctx.range_origin[missing] = "split of " + parent.text();
                    changed = true;
                }
            }
        }
        // Small defaults for the parts of a split whose whole is unknown; the first part also
        // takes the whole's shardings, so that they divide the product.
        if (ctx.small_defaults && pass == 1)
            for (const auto& [parent, parts] : splits) {
                if (ctx.has_range(parent)) continue;
                bool first = true;
                for (const auto& p : parts) {
                    if (ctx.has_range(p)) continue;
                    auto r = ctx.range(p);
                    if (auto it = ctx.shard_lcm.find({parent.name, 0});
                        first && it != ctx.shard_lcm.end())
                        r *= it->second;
                    first = false;
                    ctx.ranges[p] = r;
                    ctx.range_origin[p] = "small default";
                }
            }
    }
}

/// Checks declared splits divide exactly.
void check_splits(Context& ctx, const ast::Program& program) {
    for (const auto& item : program.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        if (!s) continue;
        const auto* sp = std::get_if<ast::SplitDecl>(&s->node);
        if (!sp) continue;
        const auto parent = id_of(sp->from);
        if (!ctx.has_range(parent)) continue;
        std::int64_t product = 1;
        bool all_known = true;
        std::string parts;
        for (const auto& p : sp->parts) {
            all_known &= ctx.has_range(id_of(p));
            product = sat_mul(product, ctx.range(id_of(p)));
            parts += (parts.empty() ? "" : "·") + id_of(p).text() + "=" +
                     std::to_string(ctx.range(id_of(p)));
        }
        if (all_known && product != ctx.range(parent))
            ctx.diag(Severity::Error, "S004", s->range,
                     "split of " + parent.text() + "=" + std::to_string(ctx.range(parent)) +
                         " into " + parts + " does not multiply out (" + std::to_string(product) +
                         ")",
                     "choose ranges whose product is " + std::to_string(ctx.range(parent)));
    }
}

// =============================================================================================
// The search over choices, and the statement plan.

// =============================================================================================
// Re-checking: statements whose plan cannot have changed are taken from the cache.

/// A statement's plan and the value it stores.
struct Planned {
    StatementPlan plan;
    Value result;
};

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

/// The plan of statement `s`: the cached one when the statement, the program-wide facts and
/// the tensors it reads are unchanged (its diagnostics replayed at the new position), else
/// `plan_statement()`, which is then cached.
template <typename F>
std::optional<Planned> cached_plan(CheckCache::Impl& cache, const std::string& context,
                                   const std::map<std::string, Value>& defined,
                                   const ast::Statement& s, const std::string& source,
                                   const std::string& pretty, std::vector<Diagnostic>& diagnostics,
                                   F&& plan_statement) {
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
        return e.planned;
    }
    const auto first = diagnostics.size();
    auto planned = plan_statement();
    CachedStatement e{
        context, std::move(reads),
        planned, {diagnostics.begin() + static_cast<std::ptrdiff_t>(first), diagnostics.end()},
        s.range, cache.generation};
    const bool positioned =
        std::all_of(e.diagnostics.begin(), e.diagnostics.end(),
                    [&](const Diagnostic& d) { return inside(d.range, s.range); });
    if (positioned) cache.entries.insert_or_assign(std::move(key), std::move(e));
    return planned;
}

struct Outcome {
    std::vector<int> choices;
    std::vector<ChoicePoint> points;
    std::vector<std::string> moves; ///< what moves: "kind,axes tensor" per collective
    std::vector<std::string> collectives;
    std::string description; ///< the collectives' reasons
    double time_s = 0;
    bool ok = false;
    bool fixed_up = false;
};

/// What a plan moves: one "kind,axes tensor" per collective; tells apart plans whose
/// collectives have the same names but act on different tensors.
std::vector<std::string> moves_of(const std::vector<Step>& steps) {
    std::vector<std::string> key;
    for (const auto& st : steps)
        if (is_collective(st.kind)) {
            std::string axes;
            for (int k : st.mesh_axes)
                axes += "," + std::to_string(k);
            key.push_back(std::string(step_kind_name(st.kind)) + axes + " " + st.tensor);
        }
    return key;
}

std::vector<std::string> collectives_of(const Context& ctx, const std::vector<Step>& steps) {
    std::vector<std::string> out;
    for (const auto& s : steps)
        if (is_collective(s.kind)) out.push_back(collective_text(ctx, s));
    return out;
}

} // namespace

std::optional<Mesh> parse_mesh_spec(const std::string& spec) {
    Mesh m;
    std::string s = spec;
    for (auto& c : s)
        if (c == ',') c = ' ';
    std::istringstream in(s);
    std::string tok;
    std::vector<std::string> toks;
    while (in >> tok)
        toks.push_back(tok);
    if (toks.empty()) return std::nullopt;
    auto to_size = [](const std::string& t) -> std::optional<std::int64_t> {
        if (t.empty() || t.size() > 9 ||
            !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return std::nullopt;
        const auto v = std::stoll(t);
        return v >= 1 ? std::optional(v) : std::nullopt;
    };
    if (toks.size() == 1 && toks[0].find('=') == std::string::npos) {
        std::string t = toks[0];
        std::size_t start = 0;
        while (true) {
            const auto x = t.find('x', start);
            auto v = to_size(t.substr(start, x - start));
            if (!v) return std::nullopt;
            m.axes.push_back({std::to_string(m.axes.size()), *v});
            if (x == std::string::npos) break;
            start = x + 1;
        }
    } else {
        for (const auto& t : toks) {
            const auto eq = t.find('=');
            if (eq == std::string::npos || eq == 0) return std::nullopt;
            auto v = to_size(t.substr(eq + 1));
            if (!v) return std::nullopt;
            m.axes.push_back({t.substr(0, eq), *v});
        }
    }
    if (m.device_count() > (std::int64_t{1} << 24)) return std::nullopt; // as the parser
    return m;
}

namespace {

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
    plan.mesh = ctx.mesh;
    // An empty device list means the identity order (the mesh may be large).
    plan.dtype = ctx.dtype;
    plan.hardware = std::string(ctx.hw->name);

    std::map<std::string, Value> defined;
    const std::string context = cache ? context_key(ctx, options) : std::string();
    StatementPlan* last = nullptr;
    bool last_failed = false; // the statement before an `expect` could not be planned
    std::vector<std::vector<std::string>> last_steps; // per chain step collectives

    for (const auto& item : program.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        if (!s) continue;
        if (const auto* ex = std::get_if<ast::Expect>(&s->node)) {
            // Expectations describe the plans at the declared sizes.
            if (last_failed || options.ignore_dims)
                continue; // its errors are reported; nothing to compare against
            if (!last) {
                ctx.diag(Severity::Error, "S300", s->range,
                         "an expectation with no statement before it",
                         "put 'expect ...' right after the statement it describes");
                continue;
            }
            std::vector<std::string> want;
            bool ok = ex->collectives.size() == last->collectives.size();
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
                    const auto& have = last->collectives[i];
                    ok = c.axes.empty() ? have.rfind(name + "(", 0) == 0 : have == want.back();
                }
            }
            if (!ok) {
                ctx.diag(Severity::Error, "S301", s->range,
                         "expected " + join_or_none(want) + ", but the plan of line " +
                             std::to_string(last->range.line) + " has " +
                             join_or_none(last->collectives),
                         "correct the expectation to 'expect " + join_or_none(last->collectives) +
                             "', or the notation");
            }
            continue;
        }
        const auto* eq = std::get_if<ast::Equation>(&s->node);
        const auto* ch = std::get_if<ast::Chain>(&s->node);
        if (!eq && !ch) continue;

        // The plan: searched, or reused from the cache when nothing it depends on changed.
        const std::string source =
            options.text.size() >= s->range.offset + s->range.length && s->range.length > 0
                ? std::string(options.text.substr(s->range.offset, s->range.length))
                : parser::print(*s);
        const std::string pretty = parser::print(*s, {true});
        auto plan_statement = [&]() -> std::optional<Planned> {
            // Search every combination of choices (replay with a choice vector, odometer order).
            // The first run (every choice 0) reports into its own list: when it turns out to be
            // the plan, which it is for any statement without choices, it is not run again.
            std::vector<Outcome> outcomes;
            std::vector<int> choices;
            std::optional<Evaluator> first_ev;
            std::optional<Value> first_result;
            std::vector<std::vector<std::string>> first_chain_cols;
            std::vector<Diagnostic> first_diags;
            for (int run = 0; run < kMaxPlans; ++run) {
                std::vector<Diagnostic> scratch;
                auto* saved = ctx.diagnostics;
                ctx.diagnostics = &scratch;
                Evaluator ev(ctx, defined, choices, run == 0);
                std::vector<std::vector<std::string>> chain_cols;
                std::optional<Value> result =
                    eq ? ev.equation(*eq, s->range) : ev.chain(*ch, s->range, chain_cols);
                ctx.diagnostics = saved;
                Outcome o;
                o.points = ev.points;
                o.choices = choices;
                o.choices.resize(ev.points.size(), 0);
                o.ok = result.has_value() && !ev.failed;
                o.fixed_up = ev.fixed_up;
                o.collectives = collectives_of(ctx, ev.steps);
                o.moves = moves_of(ev.steps);
                for (const auto& st : ev.steps) {
                    o.time_s += st.time_s;
                    if (is_collective(st.kind))
                        o.description += (o.description.empty() ? "" : "; ") + st.reason;
                }
                if (o.description.empty()) o.description = "no communication";
                if (run == 0) {
                    first_ev.emplace(std::move(ev));
                    first_result = std::move(result);
                    first_chain_cols = std::move(chain_cols);
                    first_diags = std::move(scratch);
                }
                outcomes.push_back(std::move(o));
                const Outcome& last_outcome = outcomes.back();
                // Next combination.
                auto next = last_outcome.choices;
                int pos = static_cast<int>(next.size()) - 1;
                while (pos >= 0 && next[static_cast<std::size_t>(pos)] + 1 >=
                                       last_outcome.points[static_cast<std::size_t>(pos)].options)
                    --pos;
                if (pos < 0) break;
                next[static_cast<std::size_t>(pos)]++;
                next.resize(static_cast<std::size_t>(pos) + 1);
                choices = next;
            }
            // The plan: alternatives off, cheapest fix.
            // An implied statement (computable as written) keeps the plan its notation implies;
            // a statement that needs a fix gets the cheapest legal plan of all.
            const Outcome* best = nullptr;
            // Under --strict the plan is the statement as written, errors and all.
            const bool implied = outcomes.front().ok && !outcomes.front().fixed_up;
            if (implied || ctx.strict) {
                best = &outcomes.front();
            } else {
                for (const auto& o : outcomes)
                    if (o.ok && (!best || o.time_s < best->time_s)) best = &o;
            }
            // Report on the best run (or the first, to explain the failure).
            std::optional<Evaluator> final_ev;
            std::optional<Value> result;
            std::vector<std::vector<std::string>> chain_cols;
            if (!best || best == &outcomes.front()) {
                final_ev.emplace(std::move(*first_ev));
                result = std::move(first_result);
                chain_cols = std::move(first_chain_cols);
                plan.diagnostics.insert(plan.diagnostics.end(), first_diags.begin(),
                                        first_diags.end());
            } else {
                final_ev.emplace(ctx, defined, best->choices, true);
                result = eq ? final_ev->equation(*eq, s->range)
                            : final_ev->chain(*ch, s->range, chain_cols);
            }
            Evaluator& ev = *final_ev;
            if (!result || ev.failed) return std::nullopt;

            StatementPlan sp;
            sp.range = s->range;
            sp.source = source;
            sp.pretty = pretty;
            sp.steps = ev.steps;
            sp.operands = ev.operands;
            sp.values = std::move(ev.values);
            sp.result_value = ev.result_id;
            sp.collectives = collectives_of(ctx, ev.steps);
            sp.chosen = ev.fixed_up;
            for (const auto& st : sp.steps) {
                sp.cost.time_s += st.time_s;
                sp.cost.flops_per_device += st.flops_per_device;
                sp.cost.comm_bytes_per_device += st.bytes_per_device;
            }
            sp.result = ev.layout(*result);
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
            std::set<std::vector<std::string>> seen{moves_of(sp.steps)};
            std::vector<const Outcome*> alts;
            for (const auto& o : outcomes)
                if (o.ok && seen.insert(o.moves).second) alts.push_back(&o);
            std::sort(alts.begin(), alts.end(),
                      [](auto a, auto b) { return a->time_s < b->time_s; });
            for (const auto* o : alts) {
                Alternative a;
                a.collectives = o->collectives;
                a.time_s = o->time_s;
                a.description = o->description;
                sp.alternatives.push_back(std::move(a));
            }
            if (!sp.chosen && !sp.alternatives.empty() &&
                sp.alternatives.front().time_s < sp.cost.time_s * 0.999) {
                const auto& a = sp.alternatives.front();
                ctx.diag(Severity::Note, "S400", s->range,
                         "as written this needs " + join_or_none(sp.collectives) + " (" +
                             format_seconds(sp.cost.time_s) + "); at these sizes " +
                             join_or_none(a.collectives) + " would be cheaper (" +
                             format_seconds(a.time_s) + ")",
                         a.description);
            }
            if (sp.chosen && !sp.alternatives.empty()) {
                const auto& a = sp.alternatives.front();
                ctx.diag(Severity::Note, "S401", s->range,
                         "not computable as written; chose " + join_or_none(sp.collectives) + " (" +
                             format_seconds(sp.cost.time_s) + "), the cheapest fix; next: " +
                             join_or_none(a.collectives) + " (" + format_seconds(a.time_s) + ")");
            } else if (sp.chosen) {
                ctx.diag(Severity::Note, "S401", s->range,
                         "not computable as written; chose " + join_or_none(sp.collectives) + " (" +
                             format_seconds(sp.cost.time_s) + ")");
            }
            // Uneven shards.
            auto check_even = [&](const TensorLayout& t) {
                for (std::size_t d = 0; d < t.global_shape.size(); ++d) {
                    std::int64_t split = 1;
                    for (std::size_t k = 0; k < t.placements.size(); ++k)
                        if (t.placements[k].kind == Placement::Kind::Shard &&
                            t.placements[k].dim == static_cast<int>(d))
                            split *= ctx.axis_size(static_cast<int>(k));
                    if (split > 1 && t.global_shape[d] % split != 0) {
                        ctx.diag(
                            Severity::Warning, "S500", s->range,
                            t.tensor + ": dimension " + std::to_string(d) + " (" + t.indices[d] +
                                ", " + std::to_string(t.global_shape[d]) + ") does not divide by " +
                                std::to_string(split) +
                                " devices: shards are uneven (torch.chunk: the last are smaller)",
                            "choose a range divisible by " + std::to_string(split));
                        return;
                    }
                }
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
                        const auto name =
                            std::string(collective_name(st.expect->collectives[j].kind));
                        want.push_back(name);
                        if (ok) ok = chain_cols[i][j].rfind(name + "(", 0) == 0;
                    }
                    if (!ok)
                        ctx.diag(Severity::Error, "S302", st.to.range,
                                 "the arrow says " + join_or_none(want) + ", but this step needs " +
                                     join_or_none(chain_cols[i]));
                }

            return Planned{std::move(sp), std::move(*result)};
        };
        std::optional<Planned> planned;
        if (cache) {
            planned = cached_plan(*cache, context, defined, *s, source, pretty, plan.diagnostics,
                                  plan_statement);
        } else {
            planned = plan_statement();
        }
        last_failed = !planned;
        if (last_failed) continue;
        StatementPlan& sp = planned->plan;
        sp.range = s->range;
        sp.source = source;
        // Ranges nobody gave: one note per statement, each index named once per program.
        std::vector<std::string> defaulted;
        auto note_defaults = [&](const ast::TensorRef& r) {
            for (const auto& d : r.dims)
                for (const auto& p : d.parts)
                    if (!ctx.has_range(id_of(p)) && ctx.defaulted.insert(id_of(p)).second)
                        defaulted.push_back(id_of(p).text());
        };
        ast::for_each_ref(*s, note_defaults);
        if (!defaulted.empty()) {
            std::string names, example;
            for (const auto& n : defaulted) {
                names += (names.empty() ? "" : ", ") + n;
                example += " " + n + "=4096";
            }
            ctx.diag(Severity::Note, "S501", s->range,
                     std::string(defaulted.size() == 1 ? "index " : "indices ") + names +
                         (defaulted.size() == 1 ? " has" : " have") + " no declared range; " +
                         (ctx.small_defaults ? std::string("small defaults that every sharding "
                                                           "divides are used")
                                             : "costs assume " + std::to_string(kDefaultRange)),
                     "declare the ranges, e.g. 'dim" + example + "'");
        }
        // Record the definition (for later uses) and the plan.
        const std::string key =
            eq ? parser::tensor_key(eq->lhs.name, eq->lhs.label)
               : parser::tensor_key(ch->steps.back().to.name, ch->steps.back().to.label);
        if (eq && eq->op != ast::AssignOp::Define && !defined.count(key))
            ctx.diag(Severity::Note, "S131", eq->lhs.range,
                     std::string(eq->op == ast::AssignOp::Update ? "':='" : "'+='") + " updates " +
                         key +
                         ", which no earlier statement defines: it is a program input, as written");
        defined[key] = std::move(planned->result);
        sp.target = key;
        if (eq) sp.assign = static_cast<Assign>(eq->op);
        plan.statements.push_back(std::move(sp));
        last = &plan.statements.back();
    }
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
