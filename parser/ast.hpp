// The abstract syntax of sharded Einstein notation (NOTATION.md sections 2-5, 7).
//
// Every node is a plain value: copyable, comparable with ==, printable by printer.hpp.
// Source ranges are carried for diagnostics but ignored by ==, so that
// parse(print(ast)) == ast holds for the canonical printer.
#pragma once

#include "one_inline.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace shardscope::ast {

/// A span of source text: byte offset/length, and 1-based line and column in code points.
struct SourceRange {
    std::uint32_t offset = 0;
    std::uint32_t length = 0;
    std::uint32_t line = 0;
    std::uint32_t column = 0;
    std::uint32_t end_line = 0;
    std::uint32_t end_column = 0; ///< one past the last code point
    /// Ranges never take part in AST equality (a tree printed and parsed back is the same
    /// tree); what is positioned compares them with same_place (diagnostics, plans).
    friend bool operator==(const SourceRange&, const SourceRange&) { return true; }
    bool same_place(const SourceRange& o) const {
        return offset == o.offset && length == o.length && line == o.line && column == o.column &&
               end_line == o.end_line && end_column == o.end_column;
    }
};

/// A heap box with value semantics, so recursive nodes stay copyable and comparable.
template <typename T>
class Box {
public:
    Box(T value) : ptr_(std::make_unique<T>(std::move(value))) {}
    Box(const Box& other) : ptr_(std::make_unique<T>(*other.ptr_)) {}
    Box(Box&&) noexcept = default;
    Box& operator=(const Box& other) {
        ptr_ = std::make_unique<T>(*other.ptr_);
        return *this;
    }
    Box& operator=(Box&&) noexcept = default;
    T& operator*() { return *ptr_; }
    const T& operator*() const { return *ptr_; }
    T* operator->() { return ptr_.get(); }
    const T* operator->() const { return ptr_.get(); }
    friend bool operator==(const Box& a, const Box& b) { return *a.ptr_ == *b.ptr_; }

private:
    std::unique_ptr<T> ptr_;
};

/// A mesh axis as written in a subscript: "0", "1", or a name such as "tp" or "X".
struct AxisRef {
    std::string name;
    SourceRange range;
    bool operator==(const AxisRef&) const = default;
};

/// One index: a name (one letter in subscript form), primes, and the mesh axes it is
/// distributed over, major to minor (`r'_0`, `b_{01}`).
/// `open` (`f_?`, `f_{tp?}`, docs/reference.md "Open shardings"): the sharding is left to the
/// tool; `open_axes` lists the axes it may choose from, one of them or none (empty: any mesh
/// axis), and `axes` is empty. The front door resolves open indices before checking
/// (search.hpp's resolve_open); a checker given an unresolved tree reads them as replicated,
/// which is one of the allowed choices, never a sharding nobody chose.
struct Index {
    std::string name;
    int primes = 0;
    std::vector<AxisRef> axes;
    SourceRange range;
    // Last, so that `{name, primes, axes, range}` still initializes everything else.
    bool open = false;
    std::vector<AxisRef> open_axes = {};
    bool operator==(const Index&) const = default;
};

/// One written dimension of a tensor: a single index, or a parenthesised group that splits
/// one logical dimension row-major (`(r_0 c)`).
struct Dimension {
    /// Inline when one index (all but groups): a vector cost a heap block per dimension.
    OneInline<Index> parts;
    bool grouped = false;
    SourceRange range;
    bool operator==(const Dimension&) const = default;
};

/// How a reference's indices were written; the printer keeps the form.
enum class IndexStyle { None, Subscript, Bracket };

/// A tensor occurrence: name, superscript label, dimensions, and the partial marker.
struct TensorRef {
    std::string name;
    std::string label; ///< superscript, part of the tensor's identity (`W^0` vs `W^1`)
    std::vector<Dimension> dims;
    IndexStyle style = IndexStyle::None;
    std::vector<AxisRef> partial_axes; ///< `{U_0}`: per-device partial sums over these axes
    SourceRange range;
    bool operator==(const TensorRef&) const = default;
};

struct Expr;

/// A numeric literal, kept as written.
struct Number {
    std::string text;
    bool operator==(const Number&) const = default;
};

/// A function application: `phi(x)`, `softmax_v(z)`, `AllReduce_{r_0}(x)`.
struct Call {
    std::string function; ///< canonical name (see functions.hpp)
    std::vector<Index> indices;
    Box<Expr> arg;
    bool operator==(const Call&) const = default;
};

/// A product of factors: juxtaposition or `*` (an einsum when factors carry indices).
struct Product {
    std::vector<Expr> factors;
    bool operator==(const Product&) const = default;
};

/// `num / den` or `\frac{num}{den}`.
struct Quotient {
    Box<Expr> num;
    Box<Expr> den;
    bool operator==(const Quotient&) const = default;
};

/// A signed sum of terms: `a + b - c`, or a single negated term `-a`.
struct Sum {
    std::vector<Expr> terms;
    std::vector<bool> negated; ///< one flag per term
    bool operator==(const Sum&) const = default;
};

struct Expr {
    std::variant<Number, TensorRef, Call, Product, Quotient, Sum> node;
    SourceRange range;
    bool operator==(const Expr&) const = default;
};

/// The collectives a step may name.
enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, AllToAll, Permute };

/// One expected collective: kind and (optionally) axes.
struct ExpectedCollective {
    CollectiveKind kind = CollectiveKind::AllReduce;
    std::vector<AxisRef> axes; ///< empty: any axes
    SourceRange range;
    bool operator==(const ExpectedCollective&) const = default;
};

/// `expect ...`: the collectives of the previous statement, in plan order; empty = `none`.
struct Expect {
    std::vector<ExpectedCollective> collectives;
    bool operator==(const Expect&) const = default;
};

enum class AssignOp { Define, Update, Accumulate }; ///< `=`, `:=`, `+=`

/// `lhs = rhs`, `lhs := rhs`, `lhs += rhs`.
struct Equation {
    TensorRef lhs;
    AssignOp op = AssignOp::Define;
    Expr rhs;
    bool operator==(const Equation&) const = default;
};

/// One arrow of a chain and the layout it moves to. A collective label
/// (`\xrightarrow{all-gather}`) becomes `expect`; any other label is kept as text.
/// On a chain of products, `to` is the side's moved factor and `with` its other factors.
struct ChainStep {
    std::optional<Expect> expect;
    std::string label;
    TensorRef to;
    std::vector<TensorRef> with; ///< the side's other factors, in written order
    bool operator==(const ChainStep&) const = default;
};

/// `x_{bsd} -> x_{(rc)sd} -> x_{r_0 c s d}`, or a chain of products written for context
/// (`W^0_{r'_0 f d'} x_{b r_0 t d'} -> W^0_{r'_0 f d'} x_{b s d'}`): every side is the same
/// product. `from` and every step's `to` are the factor at position `moved` (the first whose
/// layout changes; the parser chooses it, and the plan stores it); `with` holds the others,
/// which the checker moves too where their layout changes. A product implies no
/// contraction: a chain only changes layouts.
struct Chain {
    TensorRef from;
    std::vector<TensorRef> with; ///< the first side's other factors, in written order
    std::vector<ChainStep> steps;
    std::size_t moved = 0; ///< the moved factor's position on every side (0: a single tensor)
    bool product() const { return !with.empty(); }
    bool operator==(const Chain&) const = default;
};

/// A chain side's factors in written order: `with` with `moved` inserted at its position.
inline std::vector<const TensorRef*>
chain_side(const TensorRef& moved_ref, const std::vector<TensorRef>& with, std::size_t moved) {
    std::vector<const TensorRef*> out;
    out.reserve(with.size() + 1);
    for (std::size_t i = 0; i <= with.size(); ++i) {
        if (i == std::min(moved, with.size())) out.push_back(&moved_ref);
        if (i < with.size()) out.push_back(&with[i]);
    }
    return out;
}

/// Every side of a chain, each as its factors in written order (the first side, then each
/// step's).
inline std::vector<std::vector<const TensorRef*>> chain_sides(const Chain& ch) {
    std::vector<std::vector<const TensorRef*>> out;
    out.reserve(ch.steps.size() + 1);
    out.push_back(chain_side(ch.from, ch.with, ch.moved));
    for (const auto& st : ch.steps)
        out.push_back(chain_side(st.to, st.with, ch.moved));
    return out;
}

/// The positions of a chain's factors that move: those whose layout changes on some arrow, in
/// written order, and always `moved` (a single tensor's chain: position 0). The checker plans,
/// defines and reads each of them as the chain's input; the others are context.
inline std::vector<std::size_t> chain_moved_positions(const Chain& ch) {
    const auto sides = chain_sides(ch);
    std::vector<std::size_t> out;
    for (std::size_t p = 0; p < sides.front().size(); ++p) {
        bool changes = false;
        for (std::size_t s = 1; s < sides.size() && !changes; ++s)
            changes = p < sides[s].size() && p < sides[s - 1].size() &&
                      !(*sides[s][p] == *sides[s - 1][p]);
        if (changes || p == std::min(ch.moved, ch.with.size())) out.push_back(p);
    }
    return out;
}

/// One mesh axis declaration; `named` is false for `mesh 2x4` (axes "0", "1").
struct MeshAxisDecl {
    std::string name;
    std::int64_t size = 1;
    SourceRange range;
    bool operator==(const MeshAxisDecl&) const = default;
};

/// `mesh 4`, `mesh 2x4`, `mesh dp=2 tp=4 devices [...]`.
struct MeshDecl {
    std::vector<MeshAxisDecl> axes;
    bool named = false;
    std::vector<std::int64_t> devices; ///< explicit device order; empty = 0..n-1
    bool operator==(const MeshDecl&) const = default;
};

/// One `name=value` of a `dim` line.
struct DimBinding {
    Index index;
    std::int64_t size = 0;
    bool operator==(const DimBinding&) const = default;
};

/// `dim b=8 s=2048`.
struct DimDecl {
    std::vector<DimBinding> bindings;
    bool operator==(const DimDecl&) const = default;
};

/// `split s -> r t`: s = r·t, row-major.
struct SplitDecl {
    Index from;
    std::vector<Index> parts;
    bool operator==(const SplitDecl&) const = default;
};

/// `dtype bf16`.
struct DtypeDecl {
    std::string dtype;
    bool operator==(const DtypeDecl&) const = default;
};

/// `tensor x : f32`.
struct TensorDecl {
    std::string name;
    std::string label;
    std::string dtype;
    bool operator==(const TensorDecl&) const = default;
};

/// `hw h100`.
struct HwDecl {
    std::string preset;
    bool operator==(const HwDecl&) const = default;
};

/// `link tp 450GB/s 1us`: bandwidth in bytes/s and latency in seconds, with the text kept.
struct LinkDecl {
    AxisRef axis;
    double bytes_per_second = 0;
    std::string bandwidth_text;
    double latency_seconds = 0;
    std::string latency_text; ///< empty when not given
    bool operator==(const LinkDecl&) const = default;
};

enum class FunctionKind { Elementwise, Linear, Softmax, Reduction, Collective };

/// `fn swish elementwise`.
struct FnDecl {
    std::string name;
    FunctionKind kind = FunctionKind::Elementwise;
    bool operator==(const FnDecl&) const = default;
};

/// One tensor of a `param` line: `W^0`.
struct ParamTensor {
    std::string name;
    std::string label;
    SourceRange range;
    bool operator==(const ParamTensor&) const = default;
};

/// `param W^0 W^1`: the trained weights (program totals: their gradients and optimizer state
/// take their placements, so FSDP-sharded weights shard them too).
struct ParamDecl {
    std::vector<ParamTensor> tensors;
    bool operator==(const ParamDecl&) const = default;
};

/// `train adam master=f32 recompute=full`: the program is a training step (program totals).
struct TrainDecl {
    std::string optimizer = "adam"; ///< "adam" (two f32 moments) or "sgd" (no state)
    std::string master = "f32";     ///< master weights' element type, or "none"
    std::string recompute = "none"; ///< "none" or "full" (activation recomputation)
    /// ZeRO stage 1: optimizer state, 2: and gradients, partitioned over the mesh axes each
    /// weight is replicated over (0: none; stage 3 is the weights' own sharded placement)
    int zero = 0;
    bool operator==(const TrainDecl&) const = default;
};

/// `repeat l=32` ... `end`: the statements between run `count` times per program step, once
/// per layer (docs/reference.md, "Repeated layers"). `index` names the layer; a mesh axis on
/// it (`l_{pp}`) is pipeline parallelism: stage k of that axis holds a contiguous range of
/// the layers, and `microbatches`/`schedule` say how a step flows through the stages.
/// `reverse`: the layers run from last to first, each reading the values that the earlier
/// forward repeat over the same index stored in that layer (a derived backward pass).
struct RepeatDecl {
    Index index;
    std::int64_t count = 1;
    bool reverse = false;
    std::int64_t microbatches = 0; ///< `microbatches=M`; 0: not written (one micro-batch)
    std::string schedule;          ///< `schedule=gpipe|1f1b`; empty: not written (1f1b)
    bool operator==(const RepeatDecl&) const = default;
};

/// `end`: closes the innermost `repeat`.
struct EndDecl {
    bool operator==(const EndDecl&) const = default;
};

/// One statement of a program. `comment` is a trailing comment on the same line.
struct Statement {
    std::variant<MeshDecl, DimDecl, SplitDecl, DtypeDecl, TensorDecl, HwDecl, LinkDecl, FnDecl,
                 Expect, Equation, Chain, ParamDecl, TrainDecl, RepeatDecl, EndDecl>
        node;
    std::string comment;
    SourceRange range;
    bool operator==(const Statement&) const = default;
};

/// A comment on a line of its own (or a LaTeX `\textrm{...}` caption).
struct Comment {
    std::string text;
    SourceRange range;
    bool operator==(const Comment&) const = default;
};

/// One or more empty lines between items.
struct BlankLine {
    bool operator==(const BlankLine&) const = default;
};

using Item = std::variant<Statement, Comment, BlankLine>;

/// A parsed file.
struct Program {
    std::vector<Item> items;
    bool operator==(const Program&) const = default;
};

} // namespace shardscope::ast
