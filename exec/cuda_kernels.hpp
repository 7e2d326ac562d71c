// The executor's own CUDA kernels (cuda_kernels.cu), declared for host code compiled by the
// C++ compiler: strided gathers (permute, broadcast), elementwise functions and binary ops,
// reductions and the n-way reduction of the collectives. Every launch is asynchronous on
// `stream`; element types float, double and bfloat16 (permute and reduce only need the last).
#pragma once

#include "exec/functions.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace shardscope::exec::cuda {

/// Enough dimensions for every tensor of the notation's programs (ExecError beyond).
inline constexpr int kMaxDims = 12;

/// An output of `dims` dimensions of `shape` walked row-major; operand j's element for output
/// position (i_0, ..., i_d) is at Σ i_k·strides[j][k] (0 stride: broadcast).
struct Walk {
    int dims = 0;
    std::int64_t count = 1;
    std::int64_t shape[kMaxDims] = {};
    std::int64_t strides[2][kMaxDims] = {};
};

/// A reduction: output element i (kept positions, strides[0]) combines every position of the
/// reduced dimensions (red_shape, red_strides).
struct ReduceWalk {
    Walk out;
    int red_dims = 0;
    std::int64_t red_count = 1;
    std::int64_t red_shape[kMaxDims] = {};
    std::int64_t red_strides[kMaxDims] = {};
};

enum class Op2 { Add, Sub, Mul, Div, Max };

/// out[i] = in[offset_0(i)].
template <class T>
void gather(const T* in, T* out, const Walk& w, cudaStream_t stream);
/// out[i] = a[offset_0(i)] op b[offset_1(i)].
template <class T>
void binary(const T* a, const T* b, T* out, const Walk& w, Op2 op, cudaStream_t stream);
/// x[i] = f(x[i]), in place.
template <class T>
void function(T* x, std::int64_t n, Fn f, cudaStream_t stream);
/// x[i] = x[i]·factor, in place.
template <class T>
void scale(T* x, std::int64_t n, T factor, cudaStream_t stream);
/// out[i] = Σ or max over the reduced positions (max of none: -infinity), accumulated in at
/// least float; a long reduction with few outputs in two passes over parts of it (a
/// stream-ordered scratch buffer).
template <class T>
void reduce(const T* in, T* out, const ReduceWalk& w, Op2 op, cudaStream_t stream);
/// How many parts `reduce` splits each of `outputs` reductions of `reduced` positions into.
std::int64_t reduce_parts(std::int64_t outputs, std::int64_t reduced);
/// out[i] = in[0][i] op in[1][i] op ... for n <= 8 device pointers (on this device).
template <class T>
void reduce_n(T* out, const T* const* in, int n, std::int64_t count, Op2 op, cudaStream_t stream);

} // namespace shardscope::exec::cuda
