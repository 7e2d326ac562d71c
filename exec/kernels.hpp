// Local compute kernels of the executor: einsum through OpenBLAS, layout changes, elementwise
// ops, reductions, softmax, slicing. Every function works on labelled row-major tensors
// (tensor.hpp) and throws ExecError on bad arguments (mismatched extents, unknown or duplicate
// labels); none asserts. Templates are instantiated for float and double in kernels.cpp.
#pragma once

#include "exec/tensor.hpp"
#include "semantics/partial_op.hpp"

#include <cstdint>
#include <vector>

namespace shardscope::exec {

/// Contracts every label of the inputs that is not in `out`. Each label of `out` must occur in
/// some input; a label must have the same extent in every input that has it. Result dims are in
/// `out` order; 0-dim tensors (scalars) multiply.
///
/// One input: a permute plus sums. Two inputs: labels are batch (in both, kept), contracted (in
/// both, not kept), free-left or free-right; a label in one operand only and not kept is summed
/// out of it first. Operands are viewed as (batched) matrices in place, transposed through
/// CblasTrans where that suffices, and copied to [batch, free, contracted] / [batch, contracted,
/// free] only when no such view exists; one GEMM per batch element, written straight into the
/// result when `out` admits it, else permuted at the end. More than two inputs: pairwise,
/// cheapest pair first (product of extents over the union of the pair's labels); an
/// intermediate keeps the labels still needed by the other operands or by `out`.
template <class T>
Tensor<T> einsum(const std::vector<const Tensor<T>*>& inputs, const std::vector<int>& out);

/// Reorders dimensions to `labels` (a permutation of x.labels).
template <class T>
Tensor<T> permute(const Tensor<T>& x, const std::vector<int>& labels);

enum class Unary { Identity, Neg, Relu, Gelu, Silu, Sigmoid, Tanh, Exp, Log, Sqrt };

/// Applies `f` elementwise, in place. Gelu is the exact erf form 0.5·x·(1+erf(x/√2)).
template <class T>
void apply(Tensor<T>& x, Unary f);

/// x *= factor, elementwise.
template <class T>
void scale(Tensor<T>& x, T factor);

using semantics::PartialOp; ///< what a reduction computes: sum or max

/// Reduces away every label of x not in `out` (out ⊆ x.labels, result in `out` order). The max
/// of an empty range is -infinity, the sum 0.
template <class T>
Tensor<T> reduce(const Tensor<T>& x, const std::vector<int>& out, PartialOp r);

/// acc = acc + x (Sum) or max(acc, x) (Max), elementwise; acc and x must have the same labels in
/// the same order and the same shape.
template <class T>
void accumulate(Tensor<T>& acc, const Tensor<T>& x, PartialOp r);

enum class Binary { Add, Sub, Mul, Div };

/// a op b elementwise with broadcasting by label: `out` lists the result labels (every label of
/// a and b, each once, in the caller's order); an operand lacking a label is broadcast along it;
/// a shared label must have the same extent in both.
template <class T>
Tensor<T> binary(const Tensor<T>& a, const Tensor<T>& b, Binary op, const std::vector<int>& out);

/// Numerically stable softmax along `label` (max subtracted first), in place.
template <class T>
void softmax(Tensor<T>& x, int label);

/// The sub-tensor with `label`'s index in [begin, end); 0 <= begin <= end <= extent (begin ==
/// end gives extent 0).
template <class T>
Tensor<T> slice(const Tensor<T>& x, int label, std::int64_t begin, std::int64_t end);

/// Concatenates along `label`; the parts must agree in labels (and their order) and in every
/// other extent (parts of extent 0 allowed). At least one part.
template <class T>
Tensor<T> concat(const std::vector<Tensor<T>>& parts, int label);

/// Element-type conversion (float <-> double), labels and shape kept.
template <class To, class From>
Tensor<To> convert(const Tensor<From>& x);

/// The machine or its limits cannot run it: too little address space under a virtual-memory
/// limit (ulimit -v), OpenBLAS missing. The command line exits 2 on it, as on a GPU failure.
struct ResourceError : ExecError {
    using ExecError::ExecError;
};

/// Sets OpenBLAS's thread count (the sim backend runs one rank per thread and uses 1), at most
/// the pool that was started. Loads OpenBLAS if no GEMM has yet.
void set_blas_threads(int n);

/// Makes sure `callers` threads may call GEMM at once: OpenBLAS is loaded on first use (see
/// blas.cpp) and maps a 128 MiB buffer per calling thread, retrying forever when that fails,
/// so under a virtual-memory limit this checks the room first and throws ResourceError ("out
/// of memory: ...") when it lacks. Without a limit it only loads the library.
void reserve_blas_callers(int callers);

} // namespace shardscope::exec
