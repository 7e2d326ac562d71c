// GEMM through OpenBLAS, opened with dlopen on first use rather than linked: its constructor
// starts a thread pool and every pool thread and GEMM caller maps a 128 MiB buffer, which
// every command (even --version) would pay for, and which under a virtual-memory limit makes
// OpenBLAS retry forever. blas.cpp says how the address space is accounted for. The public
// controls (set_blas_threads, reserve_blas_callers) are declared in kernels.hpp.
#pragma once

#include <cblas.h>

namespace shardscope::exec {

/// C = op(A)·op(B), row-major, single precision (loads OpenBLAS on the first call).
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float* a, int lda,
          const float* b, int ldb, float* c, int ldc);
/// The same in double precision.
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const double* a, int lda,
          const double* b, int ldb, double* c, int ldc);

} // namespace shardscope::exec
