// One statement's evaluation: per-axis placement inference for every tensor occurrence and
// intermediate, the collectives it implies, their costs (NOTATION.md section 6). Internal.
#pragma once

#include "context.hpp"

#include <charconv>
#include <span>
#include <string_view>

namespace shardscope::semantics::detail {

// One statement's evaluation. Deterministic given the choices at its choice points, so the
// search can replay it with every combination. One class, defined across files: the machinery
// (diagnostics, choices, shapes, layouts, data flow, steps, collectives) in evaluator.cpp, the
// rules of NOTATION.md section 6 in semantics/rules/, one file per family (rules/README.md).

/// A product's distinct indices in first-seen order: no heap block for up to 16 of them.
using IndexOrder = SmallVec<IndexKey, 16>;

struct ChoicePoint {
    int options = 1;
    bool alternative = false; ///< an alternative to an implied plan (the implied one is option 0)
};

/// A permute's messages for its reason: "0->1, 1->2", up to eight, then their count.
std::string messages_text(const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs);

class Evaluator {
public:
    /// `fixed`: the choices, read while it evaluates (the caller's; no copy per run).
    Evaluator(Context& ctx, const Defined& defined, std::span<const int> fixed, bool report)
        : ctx_(ctx), defined_(defined), fixed_(fixed), report_(report) {
        // Typical statements stay within these; growing from empty cost a block per doubling.
        // A run that is not reported takes the steps' block of an earlier one (its steps
        // leave with the plan otherwise). The reported run's blocks stay in the plan, and a
        // block of several KB costs the allocator several times a small one: of the plan
        // dump's 505 statements, 452 have 4 steps or fewer and 490 have 8 values or fewer.
        if (!report_) steps = std::move(ctx.spare_steps);
        steps.clear();
        steps.reserve(report_ ? 4 : 8);
        if (report_) {
            values.reserve(8);
            operands.reserve(4);
        }
    }

    std::vector<Step> steps;
    /// A few inline: the search copies them per run.
    using Points = SmallVec<ChoicePoint, 8>;
    Points points;
    std::vector<TensorLayout> operands;
    bool fixed_up = false; ///< a fix was needed (the plan is chosen, not implied)
    bool failed = false;   ///< an error stopped the evaluation
    std::vector<std::string> notes;
    std::vector<ValueInfo> values; ///< the data flow (reporting runs only)
    int result_id = -1;            ///< the value the statement stores
    /// A chain of products: the factors it moves besides its result, as they end (issue 19).
    std::vector<Value> moved_also;

    // FSDP, "gather the weights instead of all-reducing activations" (NOTATION.md section 8):
    // the plan in which every tensor occurrence sharded on an index that the statement
    // contracts (an index its left-hand side lacks) is all-gathered over those axes at its
    // use. The planner runs it as one more outcome of an implied equation when a lower bound
    // of its time beats the plan's.
    /// This run gathers so (an equation's run; the planner sets it).
    bool gather_contracted = false;

    // ---- diagnostics (only on the reporting run) --------------------------------------------

    void error(Code code, const ast::SourceRange& r, std::string msg, std::string fix = {});
    void warning(Code code, const ast::SourceRange& r, std::string msg, std::string fix = {});
    void note(Code code, const ast::SourceRange& r, std::string msg, std::string fix = {});

    /// A collective the statement does not imply as written (NOTATION.md section 6, --strict):
    /// an error under --strict; otherwise a note when `note_otherwise` (fixes that the plan
    /// already reports as chosen are not noted twice).
    void not_as_written(Code code, const ast::SourceRange& at, const std::string& msg,
                        std::string fix, bool note_otherwise);

    int choose(int options, bool alternative);

    // ---- shapes and bytes -------------------------------------------------------------------

    std::int64_t global_extent(const Dim& d) const;
    /// Devices an index is split over.
    std::int64_t split_count(const Value& v, IndexKey i) const;
    static std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0); }

    std::int64_t local_extent(const Value& v, const Dim& d) const;
    double local_elements(const Value& v) const;
    double local_bytes(const Value& v) const { return local_elements(v) * v.elem_bytes; }
    /// The element size of an operation's result: the widest of its operands' (type
    /// promotion, as torch and JAX: bf16 times f32 is f32, in either order). Numbers are
    /// weakly typed, as in JAX, and do not widen it; the program's type where every operand
    /// is one.
    int promoted_bytes(const std::vector<Value>& ops) const {
        int bytes = 0;
        for (const auto& v : ops)
            if (!v.number) bytes = std::max(bytes, v.elem_bytes);
        return bytes > 0 ? bytes : ctx_.dtype_bytes;
    }

    TensorLayout layout(const Value& v) const;
    /// The same into `t`, which is empty.
    void layout_into(const Value& v, TensorLayout& t) const;

    // ---- the data flow ----------------------------------------------------------------------

    /// A new value of the data flow with `v`'s layout (recorded on reporting runs only; ids are
    /// the same on every run).
    int new_value(const Value& v, std::string load = {}, std::string constant = {});
    /// The last step turned value `in` into `v`, a new value.
    void flow(int in, Value& v);
    /// The last step computes `out` from the values `ins` with `op`.
    Step& compute(OpKind op, const std::vector<Value>& ins, Value& out);
    /// The same with one input.
    Step& compute(OpKind op, int in, Value& out);
    /// A tensor occurrence of the statement, as its value was recorded (reporting runs only).
    void record_operand(const Value& v);

    // ---- steps ------------------------------------------------------------------------------

    Link link(int k) const { return ctx_.links[static_cast<std::size_t>(k)]; }
    /// "axis tp" for one axis; "axes dp,sp (one group of 8 devices)" for a group.
    std::string axes_label(std::span<const int> ks) const;

    void add_collective(StepKind kind, int k, const Value& v, double group_bytes, double local,
                        std::string reason);
    /// One collective over the group of mesh axes `ks` (major to minor).
    void add_collective(StepKind kind, std::span<const int> ks, const Value& v, double group_bytes,
                        double local, std::string reason);

    void add_local(StepKind kind, const Value& v, std::string detail, std::string reason,
                   double flops = 0, double bytes_moved = 0, bool matrix = false);

    /// P -> R on axis k.
    void all_reduce(Value& v, int k, std::string_view why);
    /// P -> S(i) on axis k.
    void reduce_scatter(Value& v, int k, IndexKey i, std::string_view why);
    /// S -> R on axis k (and every axis minor to it on the same index, which must go too).
    void all_gather(Value& v, int k, std::string_view why);
    void slice(Value& v, int k, IndexKey i, const std::string& why);
    /// `v` summed over the local chunk of its sharded index `i`: partial over i's axes.
    Value sum_local_chunk(Value v, const IndexId& i);
    /// Completes the partial axes `ks` of `v` (all-reduced, by the cheapest plan the
    /// redistribution planner finds when there are several).
    void complete(Value& v, const std::vector<int>& ks, const ast::SourceRange& at,
                  const std::string& why);
    /// One all-reduce, reduce-scatter (onto `to`), all-gather (of `from`) or all-to-all (from
    /// `from` to `to`) over one mesh axis or the group of axes `ks`, the minor-most axes of
    /// `from` or appended to `to` in that order: every collective step is made here.
    void group_collective(Value& v, StepKind kind, const std::vector<int>& ks, const IndexId* from,
                          const IndexId* to, const std::string& why);
    /// The same with the indices as keys (the kind says which of them it reads).
    void group_collective_of(Value& v, StepKind kind, std::span<const int> ks, IndexKey from,
                             IndexKey to, std::string_view why);
    /// Every device receives its block of the layout `sharding` from one device (`pairs`:
    /// source, destination); none: each keeps part of its own block (a local step).
    void permute(Value& v, const FlatMap<IndexKey, AxisList>& sharding,
                 const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs,
                 const std::vector<int>& axes, double bytes, CollectiveTime timing,
                 const std::string& why);

    std::string temp_name() {
        char text[24] = {'%'};
        const auto end = std::to_chars(text + 1, text + sizeof text, ++temps_).ptr;
        return std::string(text, end);
    }

    // ---- references (rules/uses.cpp) --------------------------------------------------------

    /// A tensor occurrence as written (subscripts resolved), without history; null after an
    /// error. Owned by the context's cache or this evaluator, valid for the statement.
    const Value* written(const ast::TensorRef& r);

    /// The same into `v`, a new value; false after an error.
    bool written_uncached(const ast::TensorRef& r, Value& v);

    static bool writes_placement(const ast::TensorRef& r);

    /// A use on the right-hand side: inherits or requests the placement of an earlier
    /// definition (NOTATION.md section 6, across statements).
    std::optional<Value> use(const ast::TensorRef& r);

    // ---- placement transitions: the left-hand-side table (rules/left_side.cpp) --------------

    /// Moves `have` to the placement of `want` (same indices) by the cheapest sequence of
    /// exact block movements (redistribute.hpp). `why` is made a string only for a step: most
    /// transitions move nothing.
    void transition(Value& have, const Value& want, const ast::SourceRange& at,
                    std::string_view why);

    // ---- expressions ------------------------------------------------------------------------

    /// Every index mentioned under `e` (tensor indices and call subscripts).
    static void collect(const ast::Expr& e, IndexSet& out);

    std::optional<Value> eval(const ast::Expr& e, const IndexSet& outside);
    /// The same for an operand whose siblings or parent may hold a choice point: the first
    /// run of the search records it when it holds none, the other runs replay it
    /// (Context::prefix_memo).
    std::optional<Value> eval_shared(const ast::Expr& e, const IndexSet& outside);

    /// Evaluates the operands of a product or sum; for each, the indices its siblings use
    /// count as needed outside, so it contracts only what no one else needs.
    std::optional<std::vector<Value>> eval_operands(const std::vector<ast::Expr>& operands,
                                                    const IndexSet& outside);

    std::optional<Value> eval_node(const ast::Number& n, const ast::Expr&, const IndexSet&);

    std::optional<Value> eval_node(const ast::TensorRef& r, const ast::Expr&, const IndexSet&);

    std::optional<Value> eval_node(const ast::Product& p, const ast::Expr& e,
                                   const IndexSet& outside);

    // ---- one product (semantics/rules/einsum.cpp): NOTATION.md section 6, rules 1-4 ---------

    /// S211: partial operand `v` is reduced on axis k before it meets the others (`where`:
    /// "here", "before this product").
    void partial_needs_reduction(const Value& v, int k, const ast::SourceRange& at,
                                 const char* where);

    /// S215: a P(max) value `v` is all-reduced on axis k before `what`, which only P(sum) or
    /// a positive scaling passes through (NOTATION.md section 6).
    void partial_max_needs_reduction(Value& v, int k, const ast::SourceRange& at,
                                     const std::string& what);

    /// Rule 3: when the operands shard different indices on axis k, the operation (`what`)
    /// cannot be computed locally; keep one index sharded (a choice of the search) and
    /// all-gather the operands that shard another (S212). `+ - /` apply it too.
    void keep_one_sharded_index(std::vector<Value>& ops, int k, const ast::SourceRange& at,
                                const char* what);

    /// Before rule 4: a partial max survives a product on axis k only with numbers and when
    /// none of its indices is summed; otherwise it is all-reduced first (S215).
    void reduce_partial_maxes(std::vector<Value>& ops, int k, const IndexSet& outside,
                              const ast::SourceRange& at, const std::vector<bool>& constant);
    /// Rule 4: a partial operand may meet only replicated operands on axis k (P x R -> P).
    /// Several partial operands, or one next to a sharded index, are reduced first
    /// (all-reduce, or reduce-scatter onto the sharded index: a choice; S211).
    void rule4_partial_meets_replicated(std::vector<Value>& ops, int k, const ast::SourceRange& at);
    /// Rule 2, one index on its axes: per index, the operands' axis lists (major to minor)
    /// must agree, one being a prefix of the other (the shorter then slices locally).
    /// Otherwise keep one list (a choice) and gather the rest (S212).
    void rule2_one_axis_list(std::vector<Value>& ops, const IndexOrder& order,
                             const ast::SourceRange& at);
    /// Rule 2, the result on axis k: the one sharded index kept gives S(i) (set by
    /// rule2_slice_locally), contracted gives P(sum), or, the alternative, is gathered first;
    /// a partial operand leaves the result partial (rule 4's P x R -> P).
    void rule2_kept_or_contracted(std::vector<Value>& ops, int k, const IndexSet& outside,
                                  Value& out);
    /// Rule 1: nothing on axis k is sharded or partial (any more: a gather of a major axis
    /// gathers its minor axes too): the result is R on k.
    static void rule1_replicated(const std::vector<Value>& ops, int k, Value& out);
    /// Rule 2, the slices: operands that hold a sharded index on fewer axes (or none) slice
    /// locally to the full list (free); the result keeps the list of the indices it keeps.
    void rule2_slice_locally(std::vector<Value>& ops, const IndexOrder& order,
                             const IndexSet& outside, Value& out);

    /// One einsum node (NOTATION.md section 6, rules 1-4), then its local compute, priced in
    /// the greedy pair order of rules/contraction_order.hpp.
    /// `constant[o]`: operand o is a number (non-negative: a minus sign is a negated term).
    std::optional<Value> einsum(std::vector<Value>& ops, const IndexSet& outside,
                                const ast::SourceRange& at, const std::vector<bool>& constant = {});

    std::optional<Value> eval_node(const ast::Call& c, const ast::Expr& e, const IndexSet& outside);

    /// AllReduce_{r_0}(x), AllGather_{i_0}(x), ReduceScatter_{i_0}(x): written by hand.
    std::optional<Value> explicit_collective(const ast::Call& c, Value v, const ast::Expr& e);

    /// Permute_{i_k}(x): one step round the ring of the devices over the axes written, which
    /// are i's axes, major first. Each device sends its whole block to the device holding the
    /// next block of i; the value moves forward by one block along i, cyclically.
    std::optional<Value> ring_permute(const ast::Call& c, Value v, const ast::Expr& e);

    /// a + b, a - b, a / b: operands agree per axis (broadcast allowed).
    std::optional<Value> combine(std::vector<Value>& ops, bool quotient, const ast::SourceRange& at,
                                 std::vector<bool> negated = {});

    std::optional<Value> eval_node(const ast::Sum& s, const ast::Expr& e, const IndexSet& outside);

    std::optional<Value> eval_node(const ast::Quotient& q, const ast::Expr& e,
                                   const IndexSet& outside);

    // ---- statements -------------------------------------------------------------------------

    /// `v` with the indices in `gone` reduced away (with `op`): a reduced index that was
    /// sharded leaves the result partial over its axes.
    Value without(const Value& v, const IndexSet& gone, PartialOp op);

    /// Sums away the indices of `v` that the left-hand side does not have.
    void reduce_leftovers(Value& v, const IndexSet& keep, const ast::SourceRange& at);

    std::optional<Value> equation(const ast::Equation& eq, const ast::SourceRange& at);

    /// `+=`: the layout `def` (an earlier statement's result) in the index names of the
    /// left-hand side `lhs` as written at `r`; an error (S104, S203) when `r` has other
    /// dimensions or writes another placement.
    /// S105: an earlier definition `def` used (or accumulated into) at `r` as `v` with another
    /// extent in some dimension (exec could not read it).
    bool same_extents(const ast::TensorRef& r, const Value& v, const Value& def, const char* how);

    std::optional<Value> stored_layout(const ast::TensorRef& r, const Value& lhs, const Value& def);

    /// Expands split indices (declared, or learned from groups in the chain) into parts.
    std::vector<IndexId> atoms(const std::vector<Dim>& dims,
                               const std::map<IndexId, std::vector<IndexId>>& learned) const;

    /// A chain of products: every side lists the same tensors, and only the moved one changes
    /// (S141, S142). True for a chain of single tensors.
    bool product_sides(const ast::Chain& ch);
    std::optional<Value> chain(const ast::Chain& ch, const ast::SourceRange&,
                               std::vector<std::vector<std::string>>& step_collectives);

private:
    /// FSDP at the use of occurrence `v`: all-gathers its contracted indices.
    void fsdp_use(Value& v);
    /// The left-hand side's sharded indices that every occurrence on the right holds whole,
    /// over mesh axes that nothing on the right uses: slicing them at the uses computes only
    /// the blocks the result keeps (the statement as written computes all and slices after).
    /// Filled by equation() before the right-hand side is evaluated.
    void plan_early_slices(const ast::Expr& rhs, const Value& lhs);
    void find_early_slices(const ast::Expr& rhs, const Value& lhs);
    /// Slices occurrence `v` as plan_early_slices found.
    void slice_early(Value& v);
    SmallVec<IndexKey, 4> early_slices_;
    const Value* early_lhs_ = nullptr; ///< the left-hand side early_slices_ shard as

    /// The left-hand side's indices while an equation is evaluated; null otherwise.
    const IndexSet* lhs_indices_ = nullptr;
    /// Occurrences computed on runs that may not fill the context's cache.
    std::vector<std::unique_ptr<Value>> written_here_;
    Context& ctx_;
    const Defined& defined_;
    std::span<const int> fixed_;
    bool report_;
    int temps_ = 0;
    int value_count_ = 0;
};

} // namespace shardscope::semantics::detail
