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

/// C = A·B for two labelled operands as one strided batched GEMM: A is first reduced to
/// `a_keep` (labels only A has and `out` lacks are summed out) and permuted to [batch, m, k],
/// B likewise to [batch, k, n]; the GEMM writes C as [batch, m, n] (`c_labels`), which is
/// then permuted to `out`. Row-major throughout; `cublas_*` give the column-major call
/// (C^T = B^T·A^T, no transposes) that computes it.
struct GemmPlan {
    std::vector<int> a_keep, b_keep;   ///< labels kept after the private sums
    std::vector<int> a_order, b_order; ///< [batch, m, k] and [batch, k, n]
    std::vector<int> c_labels;         ///< [batch, m, n]
    std::vector<std::int64_t> c_shape; ///< extents of c_labels
    std::int64_t batch = 1, m = 1, n = 1, k = 1;
    /// The column-major cublas<T>gemmStridedBatched arguments: (M, N, K) = (n, m, k), first
    /// operand B (ld n, stride k·n), second A (ld k, stride m·k), result ld n, stride m·n.
    std::int64_t cublas_m() const { return n; }
    std::int64_t cublas_n() const { return m; }
    std::int64_t cublas_k() const { return k; }
    std::int64_t stride_a() const { return m * k; }
    std::int64_t stride_b() const { return k * n; }
    std::int64_t stride_c() const { return m * n; }
};
GemmPlan plan_gemm(const std::vector<std::int64_t>& a_shape, const std::vector<int>& a_labels,
                   const std::vector<std::int64_t>& b_shape, const std::vector<int>& b_labels,
                   const std::vector<int>& out);

/// Column-major reference GEMM with cuBLAS's argument convention (no transposes):
/// C[i + j·ldc] = Σ_p A[i + p·lda]·B[p + j·ldb], for i < M, j < N, per batch with the given
/// strides. The host tests check GemmPlan's arguments through it.
void gemm_colmajor_reference(std::int64_t M, std::int64_t N, std::int64_t K, const double* A,
                             std::int64_t lda, std::int64_t sa, const double* B, std::int64_t ldb,
                             std::int64_t sb, double* C, std::int64_t ldc, std::int64_t sc,
                             std::int64_t batch);

} // namespace shardscope::exec
