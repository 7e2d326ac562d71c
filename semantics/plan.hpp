// The Plan: what the checker derives from a program, and what every front end consumes
// (check text/JSON, REPL, GUI, executor, exporters). Plain, printable, comparable values.
#pragma once

#include "parser/ast.hpp"
#include "parser/inline_vec.hpp"
#include "parser/source.hpp"
#include "semantics/partial_op.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardscope::semantics {

/// One axis of the device mesh.
struct MeshAxis {
    std::string name; ///< "0", "1"... or a declared name such as "tp"
    std::int64_t size = 1;
    bool operator==(const MeshAxis&) const = default;
};

/// The device mesh: axes major to minor, and the device id at each mesh coordinate.
struct Mesh {
    std::vector<MeshAxis> axes;
    std::vector<std::int64_t> devices; ///< row-major over the axes; identity when not declared
    std::int64_t device_count() const;
    /// Appends to `out` the axes an axis reference names: a declared name, a position ("0"),
    /// or a run of one-letter names (`I_{XY}` on a mesh with axes X and Y). False, and
    /// nothing appended, when it names none. (A template: the checker's lists are inline.)
    template <class Out>
    bool resolve(std::string_view name, Out& out) const {
        for (std::size_t k = 0; k < axes.size(); ++k)
            if (axes[k].name == name) {
                out.push_back(static_cast<int>(k));
                return true;
            }
        if (!name.empty() &&
            std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
            std::size_t k = 0; // a position; a run of digits too long for one is no axis
            for (char c : name)
                if ((k = k * 10 + static_cast<std::size_t>(c - '0')) >= axes.size()) return false;
            out.push_back(static_cast<int>(k));
            return true;
        }
        if (name.size() < 2) return false;
        std::vector<int> each; // all letters must name an axis before any is appended
        for (std::size_t c = 0; c < name.size(); ++c)
            if (!resolve(name.substr(c, 1), each)) return false;
        for (int k : each)
            out.push_back(k);
        return true;
    }
    /// The coordinates (major axis first) of row-major position `position`.
    std::vector<int> coords_at(std::int64_t position) const;
    /// The row-major position of device `id` (`id` itself where `devices` does not list it).
    std::int64_t position_of(std::int64_t id) const;
    /// The device id at row-major position `position`.
    std::int64_t device_at(std::int64_t position) const {
        return devices.empty() ? position : devices.at(static_cast<std::size_t>(position));
    }
    /// One step round the ring of the devices over `ring` (axes, major first): each device
    /// sends to the device whose coordinates on `ring`, read as one number, are one more
    /// (cyclically), its other coordinates the same. (source, destination) ids, sorted.
    std::vector<std::pair<std::int64_t, std::int64_t>>
    ring_pairs(const std::vector<int>& ring) const;
    bool operator==(const Mesh&) const = default;
};

/// An index as the checker sees it: a name and a prime count (`d'` is {"d", 1}).
struct IndexId {
    std::string name;
    int primes = 0;
    std::string text() const; ///< `d'`
    auto operator<=>(const IndexId&) const = default;
};

std::string_view partial_op_name(PartialOp op); ///< "sum", "max"
PartialOp partial_op_of(std::string_view name); ///< "max": Max; anything else: Sum

/// What a reduction computes over the indices it removes: the built-in reductions `sum`,
/// `max` and `mean` (a closed set: a `fn` line declares only elementwise and linear
/// functions).
enum class ReduceFn { Sum, Max, Mean };
std::string_view reduce_fn_name(ReduceFn fn);                ///< "sum", "max", "mean"
std::optional<ReduceFn> reduce_fn_of(std::string_view name); ///< nullopt: not a reduction
/// How a reduction's partial results combine across devices or blocks: max for Max, sum for
/// Sum and Mean (a mean is a sum scaled once at the end).
constexpr PartialOp combine_of(ReduceFn fn) {
    return fn == ReduceFn::Max ? PartialOp::Max : PartialOp::Sum;
}

/// How a tensor is laid out along one mesh axis (DTensor's placement).
struct Placement {
    enum class Kind { Replicate, Shard, Partial };
    /// User-provided, as Step's: a layout's placements are made in place.
    Placement() {} // NOLINT(modernize-use-equals-default)
    Kind kind = Kind::Replicate;
    int dim = -1;  ///< Shard: the written dimension (0-based), groups count as one
    IndexId index; ///< Shard: the index carrying this axis
    PartialOp reduce = PartialOp::Sum; ///< Partial: how the copies combine
    std::string text() const;          ///< "R", "S(1)", "P(sum)"
    bool operator==(const Placement&) const = default;
};

/// One index of a tensor's storage (written dimensions flattened into their parts): its
/// global extent and the mesh axes it is sharded over, major to minor. Sharding over several
/// axes chunks recursively, as DTensor does: torch.chunk over the first axis, then the chunk
/// over the next.
struct AtomLayout {
    /// User-provided, as Step's: a layout's atoms are made in place.
    AtomLayout() {} // NOLINT(modernize-use-equals-default)
    AtomLayout(IndexId index, std::int64_t extent, InlineVec<int, 2> axes, int dim = 0)
        : index(std::move(index)), extent(extent), axes(std::move(axes)), dim(dim) {}
    IndexId index;
    std::int64_t extent = 1;
    InlineVec<int, 2> axes;
    int dim = 0; ///< the written dimension it belongs to (a group holds several atoms)
    bool operator==(const AtomLayout&) const = default;
};

/// One tensor occurrence or intermediate: indices, placements per mesh axis, shapes. The
/// lists are inline (a tensor has a few dimensions, a mesh a few axes): every value of every
/// statement has a layout, and a heap block per list was most of what checking allocated.
struct TensorLayout {
    std::string tensor;                 ///< `W^0`, or `%3` for an intermediate
    InlineVec<std::string, 4> indices;  ///< written dimensions: "b", "d'", "(r_0 c)"
    InlineVec<Placement, 4> placements; ///< one per mesh axis
    InlineVec<std::int64_t, 4> global_shape;
    InlineVec<std::int64_t, 4> local_shape; ///< on device 0 (the largest chunk when uneven)
    InlineVec<AtomLayout, 4> atoms;         ///< the storage, for the executor
    bool operator==(const TensorLayout&) const = default;
};

/// What a step does.
enum class StepKind {
    Compute,       ///< local compute: an einsum, elementwise op, reduction or softmax
    AllReduce,     ///< P -> R
    AllGather,     ///< S -> R
    ReduceScatter, ///< P -> S
    AllToAll,      ///< S(d) -> S(e)
    Permute,       ///< point-to-point sends (`pairs`): each device receives the parts of its
                   ///< new block it lacks, each part from one device (often its whole block)
    Slice,         ///< local, free: each device keeps the part of its block it needs (R -> S,
                   ///< and any move over a mesh axis of size 1, where nothing moves)
    Split,         ///< a reshape that splits or merges indices, free
};

/// What a local step computes: the executor's instruction. Its operands and result are
/// values of the statement (StatementPlan::values), whose layouts say which indices are
/// contracted, reduced or kept.
enum class OpKind {
    None,     ///< a collective, a slice or a reshape: the layouts say it all
    Einsum,   ///< product of the inputs, contracting indices absent from the output
    Function, ///< an elementwise function (`function`) of one input
    Linear,   ///< a linear function (`function`) of one input: partial values pass through
    Softmax,  ///< softmax along `index`; a sharded `index` all-reduces its row statistics
    Reduce,   ///< `reduce` (sum, max, mean) over the indices absent from the output
    Add,      ///< sum of the inputs, each negated or not (`negated`), with broadcasting
    Divide,   ///< first input over the second, with broadcasting
    KeepOne,  ///< R -> P: the device at coordinate 0 of the axis keeps its copy, others zero
};

std::string_view step_kind_name(StepKind kind); ///< "compute", "all-reduce", ...
/// Inline: the planner and the executors test every step of every run with it.
constexpr bool is_collective(StepKind kind) {
    return kind == StepKind::AllReduce || kind == StepKind::AllGather ||
           kind == StepKind::ReduceScatter || kind == StepKind::AllToAll ||
           kind == StepKind::Permute;
}
/// "all-reduce(0)", "all-gather(tp)": a collective as plans, expectations and exec name it.
std::string collective_text(const Mesh& mesh, StepKind kind, std::span<const int> axes);

/// The NCCL protocol a collective's time assumes (cost.hpp): the fastest on the link; None on
/// a link priced by the plain formula, and for every step that is not a collective.
enum class NcclProtocol { None, LL, LL128, Simple };
std::string_view nccl_protocol_name(NcclProtocol p); ///< "LL", "LL128", "Simple"; "" for None

/// What a step costs, per device, as the cost model estimates it.
struct StepCost {
    double bytes_per_device = 0; ///< bytes each device sends (collectives)
    int elem_bytes = 4;          ///< the element size those bytes count (the tensor's dtype)
    double flops_per_device = 0; ///< compute
    double time_s = 0;           ///< estimated
    NcclProtocol protocol = NcclProtocol::None; ///< what the time assumes (collectives)
    bool operator==(const StepCost&) const = default;
};

/// A step's words, for people: the text output, pictures and exports print them; nothing
/// runs or prices a step by them.
struct StepText {
    std::string detail; ///< compute: the local einsum ("bsd,df->bsf"); else empty
    std::string reason; ///< why, in words
    bool operator==(const StepText&) const = default;
};

/// One ordered step of a statement's plan: what it is (the fields below), what it costs
/// (`cost`) and its words (`text`).
struct Step {
    /// User-provided, so that a step made in place (`emplace_back()`) is not first zeroed
    /// whole (value-initialisation zero-fills a class whose constructor is implicit): every
    /// member has its own initialiser, and the inline lists' unused room is never read.
    Step() {} // NOLINT(modernize-use-equals-default): `= default` would zero-fill again
    StepKind kind = StepKind::Compute;
    InlineVec<int, 2> mesh_axes; ///< the axes the step communicates over (collectives)
    std::string tensor;          ///< what it acts on (a tensor or intermediate name)
    // The data flow, for the executor.
    OpKind op = OpKind::None;
    InlineVec<int, 2> inputs; ///< the values read (StatementPlan::values)
    int output = -1;          ///< the value written; -1: performed inside the next step
    /// Function, Linear: the function's name (an open set: the built-in table of
    /// parser/functions.cpp and the program's `fn` lines)
    std::string function;
    /// Reduce: what it computes; the all-reduce of a softmax's row statistic (over a sharded
    /// `index`): which statistic, Max or Sum. None for every other step.
    std::optional<ReduceFn> reduce;
    IndexId index;             ///< Softmax: the index it normalises along
    std::vector<bool> negated; ///< Add: per input
    // The exact block movement of a redistribution (the layouts of its input and output
    // values say the rest; a collective over several mesh axes runs over their product group).
    IndexId from_index; ///< all-gather, all-to-all: the index whose minor-most axis it takes
    IndexId to_index;   ///< reduce-scatter, all-to-all, slice: the index that gains the axis
    /// permute: (source device, destination device) for every message; the source sends the
    /// part of its block (input layout) that lies in the destination's block of the output
    /// layout. A destination keeps what it holds of its new block; its sources' parts and its
    /// own are disjoint and fill the block (blocks of a layout partition the tensor).
    std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
    /// permute written as `Permute_{i_k}(x)`, one step round a ring: the output is the input
    /// moved forward by `shift` positions along `from_index`, cyclically (numpy's roll), so a
    /// source's block lands in its destination's block; 0 for a redistribution's permute.
    std::int64_t shift = 0;
    StepCost cost; ///< what it costs
    StepText text; ///< its words
    bool operator==(const Step&) const = default;
};

/// Totals of a statement's plan, per device.
struct Cost {
    double flops_per_device = 0;
    double comm_bytes_per_device = 0;
    double memory_bytes_per_device = 0;
    double time_s = 0;
    bool operator==(const Cost&) const = default;
};

/// Another legal plan for the same statement, with its cost. Its collectives are stored, not
/// derived: an alternative keeps no steps (only the chosen plan's are kept).
struct Alternative {
    std::vector<std::string> collectives; ///< "all-gather(0)"
    double time_s = 0;
    std::string description;
    bool operator==(const Alternative&) const = default;
};

/// One value of a statement's data flow: every step writes a new one (single assignment).
struct ValueInfo {
    /// User-provided, as Step's: a value is made in place, and zero-filling its layout's
    /// inline room first cost more than building the layout.
    ValueInfo() {} // NOLINT(modernize-use-equals-default)
    TensorLayout layout;
    std::string load;     ///< read from the program state: this tensor (earlier result or input)
    std::string constant; ///< a number, as written
    bool operator==(const ValueInfo&) const = default;
};

/// How a statement stores its result: `=`, `:=`, `+=` (the AST's operator, one enumeration).
using Assign = ast::AssignOp;

/// The plan of one equation or chain.
struct StatementPlan {
    /// User-provided, as Step's: a plan is made in place at the end of the list.
    StatementPlan() {} // NOLINT(modernize-use-equals-default)
    ast::SourceRange range;
    std::string source; ///< the statement as written
    std::string pretty; ///< canonical Unicode form
    TensorLayout result;
    std::vector<TensorLayout> operands; ///< tensor occurrences of the right-hand side (or chain)
    std::vector<Step> steps;            ///< its collectives as text: collectives_of
    std::vector<Alternative> alternatives;
    bool chosen = false; ///< not computable as written: the cheapest legal fix was chosen
    Cost cost;
    std::vector<ValueInfo> values; ///< the data flow the steps read and write
    int result_value = -1;         ///< the value the statement stores...
    std::string target;            ///< ...as this tensor (its layout is `result`)
    /// A chain of products stores every other factor it moves too: each as one of these
    /// values (in `values`; the tensor is its layout's), in the layout the chain gives it.
    std::vector<int> also_stored;
    Assign assign = Assign::Define;
    /// How many times the statement runs per program step (a repeated block of layers runs
    /// its statements once per layer); totals multiply its cost by this.
    std::int64_t repeat = 1;
    /// Equal plans are of the same statement at the same place.
    bool operator==(const StatementPlan& o) const {
        return range.same_place(o.range) && same_content(o);
    }
    bool same_content(const StatementPlan& o) const; ///< everything but the range
    /// What the statement stores: `target` as `result`, then each of `also_stored`.
    std::vector<std::pair<std::string, const TensorLayout*>> stores() const;
};

/// The collectives of `steps`, "all-reduce(0)" in plan order: collective_text of each
/// collective step over `mesh`.
std::vector<std::string> collectives_of(const Mesh& mesh, const std::vector<Step>& steps);
/// The collectives of a statement's plan (its steps'), as plans, expectations and the
/// exporters name them; `mesh` is the Plan's.
std::vector<std::string> collectives_of(const Mesh& mesh, const StatementPlan& statement);

/// A `repeat l=N` ... `end` block: plan statements [first, last) are one layer's, and run
/// `count` times per program step (their StatementPlan::repeat is `count`).
struct RepeatBlock {
    std::string index; ///< the layer index as written (`l`)
    std::int64_t count = 1;
    bool reverse = false; ///< layers from last to first (a backward pass), see ast::RepeatDecl
    /// reverse: the forward block whose layers it reads (an index into Plan::repeats): the
    /// latest one before it over the same index and count that no other reverse block reads
    /// (so a derived backward pairs its blocks last to first); -1 when none.
    int forward = -1;
    std::size_t first = 0, last = 0;
    /// Per-layer parameters: the tensors the body reads that no statement of the program
    /// defines. Each layer has its own copy (count copies in all), sorted.
    std::vector<std::string> parameters;
    /// The tensors the body's statements store (a layer's activations, saved per layer for a
    /// reverse block over the same index), sorted.
    std::vector<std::string> defines;
    ast::SourceRange range; ///< the `repeat` line
    // Pipeline parallelism (`repeat l_{pp}=N microbatches=M schedule=1f1b`): stage k of mesh
    // axis `axis` holds layers [k*count/stages, (k+1)*count/stages).
    int axis = -1;                 ///< the pipeline's mesh axis; -1: not pipelined
    std::int64_t stages = 1;       ///< the axis's size, P
    std::int64_t microbatches = 1; ///< M: the step's batch flows through in M parts
    std::string schedule;          ///< "gpipe" or "1f1b" (pipelined blocks)
    /// The stage-to-stage sends, one `permute(axis)` step per carried tensor: after the last
    /// layer of stage k, every device of stage k sends its block of the carried tensor, one
    /// micro-batch at a time, to the device of stage k+1 at the same other coordinates (a
    /// reverse block: stage k+1 to k). `pairs` lists every (source, destination) of every
    /// boundary; `bytes_per_device` is one micro-batch's block; `time_s` one send's.
    std::vector<Step> sends;
    bool pipelined() const { return axis >= 0; }
    std::int64_t layers_per_stage() const { return stages > 0 ? count / stages : count; }
    /// The stage that holds layer `layer`.
    std::int64_t stage_of(std::int64_t layer) const {
        return pipelined() ? layer / std::max<std::int64_t>(layers_per_stage(), 1) : 0;
    }
    bool operator==(const RepeatBlock& o) const {
        return index == o.index && count == o.count && reverse == o.reverse &&
               forward == o.forward && first == o.first && last == o.last &&
               parameters == o.parameters && defines == o.defines && range.same_place(o.range) &&
               axis == o.axis && stages == o.stages && microbatches == o.microbatches &&
               schedule == o.schedule && sends == o.sends;
    }
};

/// What the memory model (totals.hpp) needs besides the statements' plans: the `param` and
/// `train` lines of the program, and the element size of tensors declared with their own
/// type (`tensor x : f32`). The checker fills it (Plan::training) from the program it checks.
struct Training {
    std::vector<std::string> params; ///< trained weights, as tensor keys (`W^0`)
    bool train = false;              ///< a `train` line: gradients and optimizer state count
    std::string optimizer = "adam";  ///< adam: two f32 moments per weight; sgd: none
    std::string master = "f32";      ///< master weights' type ("none": no master copy)
    bool recompute = false;          ///< recompute=full: activations recomputed per layer
    int zero = 0; ///< ZeRO stage 1 or 2: optimizer state (and gradients) partitioned over the
                  ///< mesh axes each weight is replicated over
    std::map<std::string, int> tensor_bytes; ///< element size of declared tensors
    bool operator==(const Training&) const = default;
};

/// The training configuration of a parsed program (the last `train` line wins; `param`
/// lines accumulate): what the checker stores as Plan::training.
Training training_of(const ast::Program& program);

/// The checked program: the mesh, every statement's plan, and the diagnostics.
struct Plan {
    Mesh mesh;
    std::string dtype = "f32";
    std::string hardware = "h100";
    std::vector<StatementPlan> statements;
    std::vector<RepeatBlock> repeats; ///< in program order; none overlap
    std::vector<Diagnostic> diagnostics;
    Training training; ///< the program's `param` and `train` lines (training_of)
    int errors() const;
    int warnings() const;
    bool operator==(const Plan&) const = default;
};

} // namespace shardscope::semantics
