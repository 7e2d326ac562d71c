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

/// The offset of reduced position r (row-major over the reduced dimensions) from an output's.
__device__ inline std::int64_t reduced_offset(const ReduceWalk& w, std::int64_t r) {
    std::int64_t off = 0;
    for (int d = w.red_dims - 1; d >= 0; --d) {
        off += (r % w.red_shape[d]) * w.red_strides[d];
        r /= w.red_shape[d];
    }
    return off;
}

template <class A>
__device__ inline A identity(Op2 op) {
    return op == Op2::Max ? A(-INFINITY) : A(0);
}

template <class T>
__global__ void reduce_kernel(const T* in, T* out, ReduceWalk w, Op2 op) {
    using A = typename Acc<T>::type;
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < w.out.count;
         i += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t base = offset_of(w.out, 0, i);
        A acc = identity<A>(op);
        for (std::int64_t r = 0; r < w.red_count; ++r)
            acc = combine(acc, A(in[base + reduced_offset(w, r)]), op);
        out[i] = T(acc);
    }
}

/// The first pass of a long reduction: part[o·parts + p] combines chunk p (of `chunk`
/// positions) of output o's reduced positions, so that parts threads share each output.
template <class T>
__global__ void reduce_part_kernel(const T* in, typename Acc<T>::type* part, ReduceWalk w,
                                   std::int64_t parts, std::int64_t chunk, Op2 op) {
    using A = typename Acc<T>::type;
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
         i < w.out.count * parts; i += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t o = i / parts, first = (i % parts) * chunk;
        const std::int64_t last = first + chunk < w.red_count ? first + chunk : w.red_count;
        const std::int64_t base = offset_of(w.out, 0, o);
        A acc = identity<A>(op);
        for (std::int64_t r = first; r < last; ++r)
            acc = combine(acc, A(in[base + reduced_offset(w, r)]), op);
        part[i] = acc;
    }
}

/// The second pass: out[o] combines output o's parts.
template <class T>
__global__ void reduce_parts_kernel(const typename Acc<T>::type* part, T* out, std::int64_t count,
                                    std::int64_t parts, Op2 op) {
    using A = typename Acc<T>::type;
    for (std::int64_t o = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; o < count;
         o += std::int64_t(gridDim.x) * blockDim.x) {
        A acc = part[o * parts];
        for (std::int64_t p = 1; p < parts; ++p)
            acc = combine(acc, part[o * parts + p], op);
        out[o] = T(acc);
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

std::int64_t reduce_parts(std::int64_t outputs, std::int64_t reduced) {
    // A thread per output leaves the GPU idle when there are few outputs and long reductions
    // (a sum to a scalar would run on one thread): split each into parts of at least 1024
    // positions until there are about 2^18 threads.
    constexpr std::int64_t threads = std::int64_t{1} << 18, min_chunk = 1024;
    if (outputs >= threads || reduced < 4 * min_chunk) return 1;
    const std::int64_t by_length = reduced / min_chunk;
    const std::int64_t by_threads = (threads + outputs - 1) / outputs;
    return by_length < by_threads ? by_length : by_threads;
}

template <class T>
void reduce(const T* in, T* out, const ReduceWalk& w, Op2 op, cudaStream_t stream) {
    if (w.out.count <= 0) return;
    const std::int64_t parts = reduce_parts(w.out.count, w.red_count);
    if (parts == 1) {
        SHARDSCOPE_LAUNCH(reduce_kernel<T>, blocks_for(w.out.count), stream)(in, out, w, op);
        return;
    }
    using A = typename Acc<T>::type;
    void* part = nullptr;
    // A failure is left for the caller's cudaGetLastError, as a failed launch would be.
    if (cudaMallocAsync(&part, static_cast<std::size_t>(w.out.count * parts) * sizeof(A), stream) !=
        cudaSuccess)
        return;
    const std::int64_t chunk = (w.red_count + parts - 1) / parts;
    SHARDSCOPE_LAUNCH(reduce_part_kernel<T>, blocks_for(w.out.count * parts), stream)
    (in, static_cast<A*>(part), w, parts, chunk, op);
    SHARDSCOPE_LAUNCH(reduce_parts_kernel<T>, blocks_for(w.out.count), stream)
    (static_cast<const A*>(part), out, w.out.count, parts, op);
    cudaFreeAsync(part, stream);
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
