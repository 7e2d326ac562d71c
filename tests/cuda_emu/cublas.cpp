// cuBLAS for the host CUDA emulator (README.md): handles, streams and
// cublasGemmStridedBatchedEx with the documented column-major semantics, argument checks and
// types (f32, f64, bf16 with f32 accumulation), queued on the handle's stream.
#include "tests/cuda_emu/emu.hpp"

#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

/// A handle: the device current when it was made and the stream it runs on.
struct cublasContext {
    int device = 0;
    cudaStream_t stream = nullptr;
};

namespace {

using shardscope::cuda_emu::fault;

std::size_t type_bytes(cudaDataType t) {
    switch (t) {
    case CUDA_R_16BF:
        return 2;
    case CUDA_R_32F:
        return 4;
    case CUDA_R_64F:
        return 8;
    default:
        return 0;
    }
}

double load(const void* p, cudaDataType t, std::int64_t i) {
    switch (t) {
    case CUDA_R_16BF:
        return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case CUDA_R_32F:
        return static_cast<const float*>(p)[i];
    default:
        return static_cast<const double*>(p)[i];
    }
}

void store(void* p, cudaDataType t, std::int64_t i, double v) {
    switch (t) {
    case CUDA_R_16BF:
        static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(float(v));
        break;
    case CUDA_R_32F:
        static_cast<float*>(p)[i] = float(v);
        break;
    default:
        static_cast<double*>(p)[i] = v;
        break;
    }
}

/// Whether (types, compute type) is a combination cuBLAS supports for this call.
bool supported(cudaDataType a, cudaDataType b, cudaDataType c, cublasComputeType_t compute) {
    if (a != b) return false;
    if (compute == CUBLAS_COMPUTE_64F) return a == CUDA_R_64F && c == CUDA_R_64F;
    if (compute == CUBLAS_COMPUTE_32F)
        return (a == CUDA_R_32F && c == CUDA_R_32F) ||
               (a == CUDA_R_16BF && (c == CUDA_R_16BF || c == CUDA_R_32F));
    return false;
}

cublasStatus_t invalid(const std::string& why) {
    std::fprintf(stderr, "cuda-emu: cublasGemmStridedBatchedEx: %s\n", why.c_str());
    return CUBLAS_STATUS_INVALID_VALUE;
}

/// Faults unless the `batch` matrices of rows x cols (leading dimension ld, batch stride
/// `stride`) at p lie in one device allocation of `device`.
void check_operand(const char* name, const void* p, cudaDataType t, std::int64_t rows,
                   std::int64_t cols, std::int64_t ld, long long stride, std::int64_t batch,
                   int device) {
    if (rows == 0 || cols == 0 || batch == 0) return;
    const std::int64_t last = (batch - 1) * stride + (cols - 1) * ld + (rows - 1);
    const auto bytes = static_cast<std::size_t>(last + 1) * type_bytes(t);
    if (!shardscope::cuda_emu::is_device_range(p, bytes, device))
        fault(std::string("cublasGemmStridedBatchedEx: operand ") + name + " (" +
              std::to_string(bytes) + " bytes from its pointer) is not inside one allocation on " +
              "device " + std::to_string(device));
}

} // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
    if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        cudaGetLastError();
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    *handle = new cublasContext{shardscope::cuda_emu::current_device(), nullptr};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    // cublasDestroy waits for the device, as the real one does.
    cudaStreamSynchronize(handle->stream);
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (shardscope::cuda_emu::stream_device(stream) != handle->device)
        fault("cublasSetStream: a stream of device " +
              std::to_string(shardscope::cuda_emu::stream_device(stream)) +
              " for a handle of device " + std::to_string(handle->device));
    handle->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS:
        return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
        return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
        return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "the GPU program failed to execute";
    case CUBLAS_STATUS_NOT_SUPPORTED:
        return "the functionality requested is not supported";
    default:
        return "an internal operation failed";
    }
}

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType Atype, int lda, long long strideA, const void* B,
    cudaDataType Btype, int ldb, long long strideB, const void* beta, void* C, cudaDataType Ctype,
    int ldc, long long strideC, int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    const int device = handle->device;
    if (shardscope::cuda_emu::current_device() != device)
        fault("cublasGemmStridedBatchedEx: the handle belongs to device " + std::to_string(device) +
              " but device " + std::to_string(shardscope::cuda_emu::current_device()) +
              " is current");
    auto is_op = [](cublasOperation_t o) {
        return o == CUBLAS_OP_N || o == CUBLAS_OP_T || o == CUBLAS_OP_C;
    };
    if (!is_op(transa) || !is_op(transb)) return invalid("transa or transb is not N, T or C");
    if (m < 0 || n < 0 || k < 0 || batchCount < 0)
        return invalid("m, n, k or batchCount is negative");
    const bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
    if (lda < std::max(1, ta ? k : m))
        return invalid("lda " + std::to_string(lda) + " < max(1, " + (ta ? "k" : "m") + ")");
    if (ldb < std::max(1, tb ? n : k))
        return invalid("ldb " + std::to_string(ldb) + " < max(1, " + (tb ? "n" : "k") + ")");
    if (ldc < std::max(1, m)) return invalid("ldc " + std::to_string(ldc) + " < max(1, m)");
    if (!supported(Atype, Btype, Ctype, computeType)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (!alpha || !beta) return invalid("alpha or beta is null");
    if (m == 0 || n == 0 || batchCount == 0) return CUBLAS_STATUS_SUCCESS;
    check_operand("A", A, Atype, ta ? k : m, ta ? m : k, lda, strideA, batchCount, device);
    check_operand("B", B, Btype, tb ? n : k, tb ? k : n, ldb, strideB, batchCount, device);
    check_operand("C", C, Ctype, m, n, ldc, strideC, batchCount, device);
    // Host pointer mode: the scalars are read now, in the compute type.
    const bool f64 = computeType == CUBLAS_COMPUTE_64F;
    const double a = f64 ? *static_cast<const double*>(alpha) : *static_cast<const float*>(alpha);
    const double b = f64 ? *static_cast<const double*>(beta) : *static_cast<const float*>(beta);
    shardscope::cuda_emu::enqueue(handle->stream, [=] {
        for (std::int64_t q = 0; q < batchCount; ++q) {
            const auto a0 = q * strideA, b0 = q * strideB, c0 = q * strideC;
            for (std::int64_t j = 0; j < n; ++j)
                for (std::int64_t i = 0; i < m; ++i) {
                    double acc64 = 0;
                    float acc32 = 0;
                    for (std::int64_t l = 0; l < k; ++l) {
                        const double x = load(A, Atype, a0 + (ta ? l + i * lda : i + l * lda));
                        const double y = load(B, Btype, b0 + (tb ? j + l * ldb : l + j * ldb));
                        if (f64)
                            acc64 += x * y;
                        else
                            acc32 += float(x) * float(y);
                    }
                    const auto at = c0 + i + j * ldc;
                    // beta = 0: C is not read (it may hold anything, NaN included).
                    const double prior = b == 0 ? 0.0 : b * load(C, Ctype, at);
                    if (f64)
                        store(C, Ctype, at, a * acc64 + prior);
                    else
                        store(C, Ctype, at, double(float(a) * acc32 + float(prior)));
                }
        }
    });
    return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"
