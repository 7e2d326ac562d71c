// The checker's program-wide facts (mesh, ranges, splits, types, hardware) and its values
// (tensor occurrences and intermediates with their shardings). Internal to semantics/.
#pragma once

#include "checker.hpp"
#include "cost.hpp"
#include "flat.hpp"
#include "index_key.hpp"
#include "plan.hpp"
#include "small_vec.hpp"

#include "parser/ast.hpp"
#include "parser/diagnostic_codes.hpp"
#include "parser/functions.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace shardscope::semantics::detail {

using Kind = Placement::Kind;
/// A few keys inline: sets of a statement's indices are made and copied per node.
using IndexSet = FlatSet<IndexKey, SmallVec<IndexKey, 8>>;
/// Mesh axes, major to minor (of one index's sharding, or as an axis reference resolves).
using AxisList = SmallVec<int, 4>;

constexpr std::int64_t kDefaultRange = 1024;

constexpr std::int64_t kMaxRange = std::numeric_limits<std::int64_t>::max();

/// a·b, saturating at kMaxRange: ranges come from the user and their products must not
/// overflow.
inline std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    return __builtin_mul_overflow(a, b, &r) ? kMaxRange : r;
}
constexpr int kMaxPlans = 256;

inline IndexId id_of(const ast::Index& ix) {
    return {ix.name, ix.primes};
}
/// The same as a key, without building an IndexId first.
inline IndexKey key_of(const ast::Index& ix) {
    return {ix.name, ix.primes};
}

// =============================================================================================
// Program-wide facts: mesh, ranges, splits, types, hardware.

struct Value;

/// What the checker knows program-wide (declarations, inferred ranges), and where its
/// diagnostics go.
struct Context {
    /// Tensor occurrences as written: history-free, so computed once per statement and reused
    /// by the search's other runs (filled by reporting runs only, so that no diagnostic is
    /// skipped). A few entries, searched in order. The first `written_used` are this
    /// statement's (plan_statement sets it to 0); the rest are spare values of earlier
    /// statements, rebuilt in place so that their blocks (dimensions, sharding) are reused.
    std::vector<std::pair<const ast::TensorRef*, std::unique_ptr<Value>>> written_cache;
    std::size_t written_used = 0;
    /// The entries past the first kWrittenScan, by reference: a statement of thousands of
    /// occurrences (a generated sum) searched them in order for each, in quadratic time.
    std::unordered_map<const ast::TensorRef*, std::size_t> written_index;
    static constexpr std::size_t kWrittenScan = 16;
    /// The search's runs agree up to their first choice point: an expression that the first
    /// run evaluated before any choice point, and finished without one, is evaluated alike
    /// by every other run. The first run (reporting) records each such non-leaf expression:
    /// where it started (the evaluator's counters), the steps it added (by position in the
    /// first run's steps, `prefix_steps` once that run is done) and its value. The other runs
    /// replay it instead of evaluating it again. The first `prefix_memo_used` entries are this
    /// statement's (plan_statement sets it to 0); the rest are spare, kept with their blocks.
    struct PrefixMemo {
        const ast::Expr* expr = nullptr;
        IndexSet outside;
        std::size_t steps_begin = 0, steps_end = 0;
        int temps_before = 0, temps_after = 0;
        int values_before = 0, values_after = 0;
        bool fixed_up_before = false, fixed_up_after = false;
        std::unique_ptr<Value> result;
    };
    std::vector<PrefixMemo> prefix_memo;
    /// The steps' block of a statement's last unreported run, for the next statement's
    /// (Evaluator's constructor).
    std::vector<Step> spare_steps;
    std::size_t prefix_memo_used = 0;
    /// Evaluator::plan_early_slices' finding for the statement being planned, whose
    /// right-hand side is `early_slices_for` (plan_statement resets it per statement).
    const ast::Expr* early_slices_for = nullptr;
    SmallVec<IndexKey, 4> early_slices;
    bool prefix_memo_filling = false;                ///< the first run records
    const std::vector<Step>* prefix_steps = nullptr; ///< the first run's steps, once it is done
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
    /// Indices whose `dim` declaration was ignored (CheckOptions::ignore_dims: small sizes).
    /// Sharded over device groups of different sizes, such an index takes the least common
    /// multiple of their sizes instead of being a conflicting device index (S005): `check`
    /// accepted it with its declared range.
    std::set<IndexId> ignored_dims;
    std::vector<Diagnostic>* diagnostics = nullptr;
    std::set<IndexId> defaulted;                  ///< ranges that took the default (noted once)
    std::set<IndexId> conflicts;                  ///< ranges already reported as conflicting
    std::map<IndexId, ast::SourceRange> split_at; ///< where each split is declared
    bool frozen_ = false;
    std::vector<std::string> axis_labels_;
    struct MemoSlot {
        std::uint64_t key = 0; ///< packed(index); 0: empty
        std::int64_t range = 0;
    };
    static constexpr std::size_t kMemoSlots = 64;
    mutable std::array<MemoSlot, kMemoSlots> range_memo_{};
    mutable std::size_t memo_used_ = 0;
    mutable std::array<std::int64_t, 256> letter_memo_{};
    mutable std::array<MemoSlot, kMemoSlots> key_memo_{}; ///< by IndexKey::raw (0: empty)
    mutable std::size_t key_memo_used_ = 0;

    /// A diagnostic with code `code` (the Diagnostic keeps its text, "S101").
    void diag(Severity s, Code code, const ast::SourceRange& r, std::string msg,
              std::string fix = {}) const {
        diagnostics->push_back(
            {s, std::string(code_name(code)), r, std::move(msg), std::move(fix)});
    }

    std::string axis_label(int k) const {
        if (static_cast<std::size_t>(k) < axis_labels_.size())
            return axis_labels_[static_cast<std::size_t>(k)];
        const auto& a = mesh.axes[static_cast<std::size_t>(k)];
        return a.name == std::to_string(k) ? "axis " + a.name
                                           : "axis " + a.name + " (" + std::to_string(k) + ")";
    }
    std::string axis_name(int k) const { return mesh.axes[static_cast<std::size_t>(k)].name; }
    std::int64_t axis_size(int k) const { return mesh.axes[static_cast<std::size_t>(k)].size; }

    /// Resolves an axis as written: a declared name, a position ("0"), or a run of one-letter
    /// names (`I_{XY}` on a mesh with axes X and Y). Empty on failure (after a diagnostic).
    AxisList resolve_axis(const ast::AxisRef& a, bool report = true) const {
        if (AxisList out; mesh.resolve(a.name, out)) return out;
        if (report) {
            if (!has_mesh) {
                diag(Severity::Error, Code::S100, a.range,
                     "mesh axis '" + a.name + "' is used but no mesh is declared",
                     "declare the mesh first, e.g. 'mesh 4' or 'mesh dp=2 tp=4'");
            } else {
                std::string names;
                for (std::size_t k = 0; k < mesh.axes.size(); ++k)
                    names += (k ? ", " : "") + mesh.axes[k].name;
                diag(Severity::Error, Code::S102, a.range, "unknown mesh axis '" + a.name + "'",
                     "the mesh has axes " + names);
            }
        }
        return {};
    }

    /// An index's range. Once the ranges are final (`freeze_ranges`), answered from a memo
    /// keyed by the index packed into one integer: the evaluator asks for ranges thousands of
    /// times per statement, and each search of `ranges` compared strings.
    std::int64_t range(const IndexId& i) const {
        // Most indices are one unprimed letter: a table by that byte (0: not yet known).
        if (frozen_ && i.primes == 0 && i.name.size() == 1) {
            auto& r = letter_memo_[static_cast<unsigned char>(i.name[0])];
            if (r == 0) r = range_uncached(i);
            return r;
        }
        const auto key = packed(i);
        if (!frozen_ || !key) return range_uncached(i);
        // Open addressing, linear probing; a full table answers uncached.
        auto slot = static_cast<std::size_t>((*key * 0x9E3779B97F4A7C15ull) >> 58);
        for (std::size_t probe = 0; probe < kMemoSlots; ++probe) {
            auto& m = range_memo_[(slot + probe) % kMemoSlots];
            if (m.key == *key) return m.range;
            if (m.key == 0) {
                if (memo_used_ * 4 >= kMemoSlots * 3) break;
                ++memo_used_;
                m.key = *key;
                m.range = range_uncached(i);
                return m.range;
            }
        }
        return range_uncached(i);
    }
    /// The same for a key: one unprimed letter from the table by its byte, others by their
    /// key from the memo.
    std::int64_t range(IndexKey i) const {
        if (const auto c = i.letter(); c && frozen_ && letter_memo_[c] != 0) return letter_memo_[c];
        return range_of_key(i);
    }
    /// range(i) past its fast path (a letter whose range is known).
    std::int64_t range_of_key(IndexKey i) const {
        if (frozen_) {
            if (const auto c = i.letter()) {
                auto& r = letter_memo_[c];
                if (r == 0) r = range_uncached(i.id());
                return r;
            }
            if (const auto key = i.raw()) {
                auto slot = static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 58);
                for (std::size_t probe = 0; probe < kMemoSlots; ++probe) {
                    auto& m = key_memo_[(slot + probe) % kMemoSlots];
                    if (m.key == key) return m.range;
                    if (m.key == 0) {
                        if (key_memo_used_ * 4 >= kMemoSlots * 3) break;
                        ++key_memo_used_;
                        m.key = key;
                        m.range = range_uncached(i.id());
                        return m.range;
                    }
                }
            }
        }
        return range_uncached(i.id());
    }
    /// The ranges will not change any more (declarations and inference are done).
    void freeze_ranges() {
        frozen_ = true;
        // The mesh is final too: its axes' labels, for the words of every collective.
        for (std::size_t k = 0; k < mesh.axes.size(); ++k)
            axis_labels_.push_back(axis_label(static_cast<int>(k)));
    }

    /// `i` as one nonzero integer (name bytes, length, primes, a top bit), for names of up
    /// to 6 bytes.
    static std::optional<std::uint64_t> packed(const IndexId& i) {
        const auto n = i.name.size();
        if (n > 6 || i.primes < 0 || i.primes > 127) return std::nullopt;
        std::uint64_t key = 0;
        for (std::size_t c = 0; c < n; ++c)
            key |= static_cast<std::uint64_t>(static_cast<unsigned char>(i.name[c])) << (8 * c);
        return key | static_cast<std::uint64_t>(n) << 48 |
               static_cast<std::uint64_t>(i.primes) << 56 | std::uint64_t{1} << 63;
    }

    std::int64_t range_uncached(const IndexId& i) const {
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
inline std::string collective_text(const Context& ctx, const Step& s) {
    return semantics::collective_text(ctx.mesh, s.kind, s.mesh_axes);
}

// =============================================================================================
// Values: a tensor occurrence or an intermediate, with its sharding.

struct Dim {
    OneInline<IndexKey> parts; ///< one index, or a group's parts in order
    std::string text;          ///< as written: "b", "d'", "(r_0 c)"
    bool operator==(const Dim&) const = default;
};

/// A value's partial mesh axes, flat by axis: per axis, not partial or how its pending copies
/// combine (PartialOp). A few bytes inline (meshes rarely have more than a handful of axes),
/// so a partial value costs no heap block and its copies and comparisons are byte copies.
/// Iterates (axis, op) pairs in axis order, as the map it replaces did.
class PartialAxes {
public:
    /// Whether axis k is partial.
    bool has(int k) const { return code(k) != 0; }
    /// Whether axis k is partial with reduction `op`.
    bool is(int k, PartialOp op) const { return code(k) == code_of(op); }
    /// Axis k's reduction; axis k must be partial.
    PartialOp at(int k) const { return op_of(code(k)); }
    void set(int k, PartialOp op) {
        if (k < 0) return;
        const auto at = static_cast<std::size_t>(k);
        if (at >= ops_.size()) ops_.resize(at + 1, 0);
        ops_[at] = code_of(op);
    }
    void erase(int k) {
        if (k < 0 || static_cast<std::size_t>(k) >= ops_.size()) return;
        ops_[static_cast<std::size_t>(k)] = 0;
        while (!ops_.empty() && ops_.back() == 0) // trailing axes dropped: one form per value
            ops_.erase(ops_.end() - 1);
    }
    bool empty() const { return ops_.empty(); }
    void clear() { ops_.clear(); }
    friend bool operator==(const PartialAxes& a, const PartialAxes& b) { return a.ops_ == b.ops_; }

    class const_iterator {
    public:
        std::pair<int, PartialOp> operator*() const { return {k_, op_of((*ops_)[k_u()])}; }
        const_iterator& operator++() {
            ++k_;
            skip();
            return *this;
        }
        bool operator==(const const_iterator& o) const { return k_ == o.k_; }
        bool operator!=(const const_iterator& o) const { return k_ != o.k_; }

    private:
        friend class PartialAxes;
        const_iterator(const SmallVec<std::uint8_t, 8>* ops, int k) : ops_(ops), k_(k) { skip(); }
        std::size_t k_u() const { return static_cast<std::size_t>(k_); }
        void skip() {
            while (k_u() < ops_->size() && (*ops_)[k_u()] == 0)
                ++k_;
        }
        const SmallVec<std::uint8_t, 8>* ops_;
        int k_;
    };
    const_iterator begin() const { return {&ops_, 0}; }
    const_iterator end() const { return {&ops_, static_cast<int>(ops_.size())}; }

private:
    static std::uint8_t code_of(PartialOp op) { return op == PartialOp::Max ? 2 : 1; }
    static PartialOp op_of(std::uint8_t c) { return c == 2 ? PartialOp::Max : PartialOp::Sum; }
    std::uint8_t code(int k) const {
        return k >= 0 && static_cast<std::size_t>(k) < ops_.size()
                   ? ops_[static_cast<std::size_t>(k)]
                   : 0;
    }
    SmallVec<std::uint8_t, 8> ops_; ///< per axis: 0 not partial, 1 sum, 2 max; no trailing 0
};

struct Value {
    std::string name;
    std::vector<Dim> dims;
    FlatMap<IndexKey, AxisList> sharding; ///< index -> mesh axes, major to minor
    PartialAxes partial;                  ///< per mesh axis: P(sum), P(max) or not partial
    int elem_bytes = 4;
    int id = -1;         ///< the value of the statement's data flow (StatementPlan::values)
    bool number = false; ///< a number as written (weakly typed: promoted_bytes)
    bool operator==(const Value&) const = default;

    IndexSet indices() const {
        IndexSet s;
        for (const auto& d : dims)
            s.insert(d.parts.begin(), d.parts.end());
        return s;
    }
    bool has(IndexKey i) const { return dim_of(i) >= 0; }
    /// The written dimension holding index `i`, or -1.
    int dim_of(IndexKey i) const {
        for (std::size_t d = 0; d < dims.size(); ++d) {
            const auto& parts = dims[d].parts;
            if (parts.size() == 1) { // most dimensions: one index, compared without a loop
                if (parts.front() == i) return static_cast<int>(d);
                continue;
            }
            for (const auto& p : parts)
                if (p == i) return static_cast<int>(d);
        }
        return -1;
    }
    /// The index sharded on axis k, if any.
    std::optional<IndexKey> sharded_on(int k) const {
        if (const auto* i = sharded_index(k)) return *i;
        return std::nullopt;
    }
    /// The same as a pointer; valid until the sharding changes.
    const IndexKey* sharded_index(int k) const {
        for (const auto& [i, axes] : sharding)
            if (std::find(axes.begin(), axes.end(), k) != axes.end()) return &i;
        return nullptr;
    }
    Placement placement(int k) const {
        Placement p;
        if (partial.has(k)) {
            p.kind = Kind::Partial;
            p.reduce = partial.at(k);
        } else if (const auto* i = sharded_index(k)) {
            p.kind = Kind::Shard;
            i->assign_to(p.index);
            p.dim = dim_of(*i);
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

/// The tensors defined so far, by name, as their statements left them (looked up once per
/// tensor occurrence: a hash map, as programs reach 100k statements).
using Defined = std::unordered_map<std::string, Value>;

/// A written dimension for display: `r_0`, `d'`, `(r_0 c)`.
std::string dim_text(const ast::Dimension& d);
/// The same into `out`, which is empty (a value's dimension: no temporary).
void dim_text_into(const ast::Dimension& d, std::string& out);

/// The parts of an index under `splits` (nullptr when it is not split).
inline auto split_parts(const std::map<IndexId, std::vector<IndexId>>& splits) {
    return [&splits](const IndexId& i) -> const std::vector<IndexId>* {
        auto it = splits.find(i);
        return it == splits.end() ? nullptr : &it->second;
    };
}

/// The indices from `from` down to `target` (both included) through split parts, or empty
/// when `target` is not among them; `parts_of(i)` gives i's parts or nullptr. Each index is
/// visited once, so any graph of splits, cyclic or not, ends the search.
template <class PartsOf>
std::vector<IndexId> split_path(const PartsOf& parts_of, const IndexId& from,
                                const IndexId& target) {
    std::set<IndexId> seen;
    std::function<std::vector<IndexId>(const IndexId&)> walk = [&](const IndexId& i) {
        if (i == target) return std::vector<IndexId>{i};
        const auto* parts = seen.insert(i).second ? parts_of(i) : nullptr;
        for (std::size_t k = 0; parts && k < parts->size(); ++k)
            if (auto path = walk((*parts)[k]); !path.empty()) {
                path.insert(path.begin(), i);
                return path;
            }
        return std::vector<IndexId>{};
    };
    return walk(from);
}

/// The checker's mesh of a `mesh` line.

/// Reads the declarations (mesh, dim, split, dtype, tensor, hw, function, link) into `ctx`.
void declare(Context& ctx, const ast::Program& program, const CheckOptions& options);
/// Range inference: device indices take their axes' size; splits give the missing factor.
void infer_ranges(Context& ctx, const ast::Program& program);
/// Checks declared splits divide exactly.
void check_splits(Context& ctx, const ast::Program& program);

} // namespace shardscope::semantics::detail
