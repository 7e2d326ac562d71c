// The index math of the device kernels, on the host: strides for a permute or broadcast, the
// loop shape of a reduction, and an einsum of two operands as one strided batched GEMM.
// Backend-agnostic (no CUDA), so that it is tested where no GPU is.
#pragma once

#include <cstdint>
#include <vector>

namespace shardscope::exec {

/// For a row-major tensor of `shape` labelled `labels`: the stride (in elements) of each label of
/// `out`, in `out` order; 0 for a label of `out` the tensor lacks (broadcast). Every label of
/// the tensor must be in `out` unless `allow_missing`. Throws ExecError otherwise.
std::vector<std::int64_t> strides_for(const std::vector<std::int64_t>& shape,
                                      const std::vector<int>& labels, const std::vector<int>& out,
                                      bool allow_missing = false);

/// A reduction as loops: the kept labels (out order) and the reduced ones, each with its
/// extent and its stride in the input. Output element i walks every reduced position.
struct ReducePlan {
    std::vector<std::int64_t> out_shape, out_strides; ///< kept labels, `out` order
    std::vector<std::int64_t> red_shape, red_strides; ///< reduced labels, input order
    std::int64_t out_count = 1, red_count = 1;
};
ReducePlan plan_reduce(const std::vector<std::int64_t>& shape, const std::vector<int>& labels,
                       const std::vector<int>& out);

/// One cublas<T>gemmStridedBatched call, column-major: C (M x N, ld ldc) = op(first) ·
/// op(second), `trans_*` meaning CUBLAS_OP_T.
struct GemmCall {
    bool trans_first = false, trans_second = false;
    std::int64_t M = 1, N = 1, K = 1;
    std::int64_t ld_first = 1, ld_second = 1, ldc = 1;
    std::int64_t stride_first = 0, stride_second = 0, stride_c = 0, batch = 1;
};

/// C = A·B for two labelled operands as one strided batched GEMM: A is first reduced to
/// `a_keep` (labels only A has and `out` lacks are summed out) and brought to `a_order`,
/// [batch, m, k] or, when A is stored so already, [batch, k, m] (read transposed, no copy);
/// B likewise to [batch, k, n] or [batch, n, k]. The GEMM writes C as [batch, m, n]
/// (`c_labels`: batch, m and n in `out`'s order), which is then permuted to `out`. Row-major
/// throughout; call() gives the column-major cuBLAS call (C^T = B^T·A^T).
struct GemmPlan {
    std::vector<int> a_keep, b_keep;       ///< labels kept after the private sums
    std::vector<int> a_order, b_order;     ///< the layout each operand is brought to
    bool a_trans = false, b_trans = false; ///< a_order is [batch, k, m]; b_order [batch, n, k]
    std::vector<int> c_labels;             ///< [batch, m, n]
    std::vector<std::int64_t> c_shape;     ///< extents of c_labels
    std::int64_t batch = 1, m = 1, n = 1, k = 1;
    GemmCall call() const;
};
GemmPlan plan_gemm(const std::vector<std::int64_t>& a_shape, const std::vector<int>& a_labels,
                   const std::vector<std::int64_t>& b_shape, const std::vector<int>& b_labels,
                   const std::vector<int>& out);

/// Column-major reference GEMM with cuBLAS's argument convention, per batch with the call's
/// strides: C[i + j·ldc] = Σ_p op(F)[i, p]·op(S)[p, j], op(X)[r, c] = X[r + c·ld] or, when
/// transposed, X[c + r·ld]. The host tests check GemmPlan::call() through it.
void gemm_colmajor_reference(const GemmCall& call, const double* first, const double* second,
                             double* c);

} // namespace shardscope::exec
