// The executor's CUDA kernels (see cuda_kernels.hpp). Grid-stride loops over 64-bit indices;
// one kernel per operation kind, instantiated for float, double and bfloat16.
#include "exec/cuda_kernels.hpp"

#include <cuda_bf16.h>

#include <cmath>

// nvcc launches with <<<>>>; the tests' host emulator (tests/cuda_emu) compiles this file as
// C++ with a launch of its own.
#ifndef SHARDSCOPE_LAUNCH
#define SHARDSCOPE_LAUNCH(kernel, blocks, stream) kernel<<<(blocks), 256, 0, (stream)>>>
#endif

namespace shardscope::exec::cuda {

namespace {

template <class T>
struct Acc {
    using type = float;
};
template <>
struct Acc<double> {
    using type = double;
};

__device__ inline std::int64_t offset_of(const Walk& w, int j, std::int64_t i) {
    std::int64_t off = 0;
    for (int d = w.dims - 1; d >= 0; --d) {
        const std::int64_t e = w.shape[d];
        off += (i % e) * w.strides[j][d];
        i /= e;
    }
    return off;
}

template <class A>
__device__ inline A combine(A x, A y, Op2 op) {
    switch (op) {
    case Op2::Add:
        return x + y;
    case Op2::Sub:
        return x - y;
    case Op2::Mul:
        return x * y;
    case Op2::Div:
        return x / y;
    case Op2::Max:
        return x > y || x != x ? x : y; // a NaN wins, as on the host (kernels.cpp)
    }
    return x;
}

unsigned blocks_for(std::int64_t n) {
    const std::int64_t b = (n + 255) / 256;
    return static_cast<unsigned>(b < 65535 * 16 ? (b > 0 ? b : 1) : 65535 * 16);
}

template <class T>
__global__ void gather_kernel(const T* in, T* out, Walk w) {
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < w.count;
         i += std::int64_t(gridDim.x) * blockDim.x)
        out[i] = in[offset_of(w, 0, i)];
}

template <class T>
__global__ void binary_kernel(const T* a, const T* b, T* out, Walk w, Op2 op) {
    using A = typename Acc<T>::type;
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < w.count;
         i += std::int64_t(gridDim.x) * blockDim.x)
        out[i] = T(combine(A(a[offset_of(w, 0, i)]), A(b[offset_of(w, 1, i)]), op));
}

template <class T>
__global__ void function_kernel(T* x, std::int64_t n, Fn f) {
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::int64_t(gridDim.x) * blockDim.x)
        x[i] = T(fn_eval(f, double(x[i])));
}

template <class T>
__global__ void scale_kernel(T* x, std::int64_t n, T factor) {
    using A = typename Acc<T>::type;
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::int64_t(gridDim.x) * blockDim.x)
        x[i] = T(A(x[i]) * A(factor));
}

template <class T>
__global__ void reduce_kernel(const T* in, T* out, ReduceWalk w, Op2 op) {
    using A = typename Acc<T>::type;
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < w.out.count;
         i += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t base = offset_of(w.out, 0, i);
        A acc = op == Op2::Max ? -INFINITY : A(0);
        for (std::int64_t r = 0; r < w.red_count; ++r) {
            std::int64_t off = base, rest = r;
            for (int d = w.red_dims - 1; d >= 0; --d) {
                off += (rest % w.red_shape[d]) * w.red_strides[d];
                rest /= w.red_shape[d];
            }
            acc = combine(acc, A(in[off]), op);
        }
        out[i] = T(acc);
    }
}

template <class T>
struct Pointers {
    const T* p[8];
};

template <class T>
__global__ void reduce_n_kernel(T* out, Pointers<T> in, int n, std::int64_t count, Op2 op) {
    using A = typename Acc<T>::type;
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
         i += std::int64_t(gridDim.x) * blockDim.x) {
        A acc = A(in.p[0][i]);
        for (int q = 1; q < n; ++q)
            acc = combine(acc, A(in.p[q][i]), op);
        out[i] = T(acc);
    }
}

} // namespace

template <class T>
void gather(const T* in, T* out, const Walk& w, cudaStream_t stream) {
    if (w.count > 0) SHARDSCOPE_LAUNCH(gather_kernel<T>, blocks_for(w.count), stream)(in, out, w);
}

template <class T>
void binary(const T* a, const T* b, T* out, const Walk& w, Op2 op, cudaStream_t stream) {
    if (w.count > 0)
        SHARDSCOPE_LAUNCH(binary_kernel<T>, blocks_for(w.count), stream)(a, b, out, w, op);
}

template <class T>
void function(T* x, std::int64_t n, Fn f, cudaStream_t stream) {
    if (n > 0) SHARDSCOPE_LAUNCH(function_kernel<T>, blocks_for(n), stream)(x, n, f);
}

template <class T>
void scale(T* x, std::int64_t n, T factor, cudaStream_t stream) {
    if (n > 0) SHARDSCOPE_LAUNCH(scale_kernel<T>, blocks_for(n), stream)(x, n, factor);
}

template <class T>
void reduce(const T* in, T* out, const ReduceWalk& w, Op2 op, cudaStream_t stream) {
    if (w.out.count > 0)
        SHARDSCOPE_LAUNCH(reduce_kernel<T>, blocks_for(w.out.count), stream)(in, out, w, op);
}

template <class T>
void reduce_n(T* out, const T* const* in, int n, std::int64_t count, Op2 op, cudaStream_t stream) {
    if (count <= 0 || n <= 0) return;
    Pointers<T> p{};
    for (int q = 0; q < n && q < 8; ++q)
        p.p[q] = in[q];
    SHARDSCOPE_LAUNCH(reduce_n_kernel<T>, blocks_for(count), stream)
    (out, p, n < 8 ? n : 8, count, op);
}

#define SHARDSCOPE_KERNELS(T)                                                                      \
    template void gather<T>(const T*, T*, const Walk&, cudaStream_t);                              \
    template void binary<T>(const T*, const T*, T*, const Walk&, Op2, cudaStream_t);               \
    template void function<T>(T*, std::int64_t, Fn, cudaStream_t);                                 \
    template void scale<T>(T*, std::int64_t, T, cudaStream_t);                                     \
    template void reduce<T>(const T*, T*, const ReduceWalk&, Op2, cudaStream_t);                   \
    template void reduce_n<T>(T*, const T* const*, int, std::int64_t, Op2, cudaStream_t);
SHARDSCOPE_KERNELS(float)
SHARDSCOPE_KERNELS(double)
SHARDSCOPE_KERNELS(__nv_bfloat16)

} // namespace shardscope::exec::cuda
