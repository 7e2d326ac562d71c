// Shared by the CUDA backend's host code: error checks that become ExecError with a message
// for the user, device buffers, and the labelled device tensor the local compute works on.
#pragma once

#include "exec/tensor.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace shardscope::exec::cuda {

/// Throws ExecError naming `what` and the CUDA error; out of memory says how much was asked.
void check(cudaError_t e, const char* what);
void check(cublasStatus_t s, const char* what);

/// True when `p` is device (or managed) memory on `device`, so that a kernel there may use it.
bool on_device(const void* p, int device);

/// An owned device allocation. With a stream: from the device's pool (cudaMallocAsync), freed
/// in that stream's order, so that a rank's temporaries cost no device synchronisation.
class Buffer {
public:
    Buffer() = default;
    explicit Buffer(std::size_t bytes, cudaStream_t stream = nullptr);
    /// Adopts the owning handle of a device-resident Tensor (Tensor::device).
    Buffer(std::shared_ptr<void> owner, std::size_t bytes) : p_(std::move(owner)), bytes_(bytes) {}
    /// The owning handle, for Tensor::device (copies share the allocation).
    const std::shared_ptr<void>& handle() const { return p_; }
    void* get() const { return p_.get(); }
    std::size_t bytes() const { return bytes_; }
    template <class T>
    T* as() const {
        return static_cast<T*>(p_.get());
    }

private:
    std::shared_ptr<void> p_;
    std::size_t bytes_ = 0;
};

/// A row-major tensor in device memory; labels as Tensor<T>.
template <class T>
struct DeviceTensor {
    std::vector<std::int64_t> shape;
    std::vector<int> labels;
    Buffer data;
    std::int64_t size() const {
        std::int64_t n = 1;
        for (auto e : shape)
            n *= e;
        return n;
    }
    T* ptr() const { return data.as<T>(); }
};

/// A stream and a cuBLAS handle on one device: what one rank computes with.
class Context {
public:
    /// `pooled`: this context's buffers come from the device's stream-ordered pool
    /// (alloc_stream); otherwise from cudaMalloc, visible to every GPU's copies.
    explicit Context(int device, bool pooled = true);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;
    int device() const { return device_; }
    cudaStream_t stream() const { return stream_; }
    /// The stream to allocate buffers on (Buffer's argument): null when not pooled.
    cudaStream_t alloc_stream() const { return pooled_ ? stream_ : nullptr; }
    /// The cuBLAS handle on this stream, made on first use (a collective's Memory never needs
    /// one).
    cublasHandle_t blas() const;
    void sync() const;

private:
    int device_;
    bool pooled_;
    cudaStream_t stream_ = nullptr;
    mutable cublasHandle_t blas_ = nullptr;
};

template <class T>
DeviceTensor<T> upload(const Tensor<T>& x, const Context& c);
template <class T>
Tensor<T> download(const DeviceTensor<T>& x, const Context& c);

/// Device einsum of one or two operands (the plan's steps; more are contracted pairwise, left
/// to right): a permute kernel, then one strided batched GEMM (einsum_plan.hpp's GemmPlan).
/// T: float, double or __nv_bfloat16 (bfloat16 accumulates in f32).
template <class T>
DeviceTensor<T> einsum(const std::vector<const DeviceTensor<T>*>& inputs,
                       const std::vector<int>& out, const Context& c);
/// Reorders dimensions to `labels` (no copy when already in order).
template <class T>
DeviceTensor<T> permute(const DeviceTensor<T>& x, const std::vector<int>& labels, const Context& c);

} // namespace shardscope::exec::cuda
