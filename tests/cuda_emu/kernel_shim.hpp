// What exec/cuda_kernels.cu needs to compile as host C++ for the emulator: the CUDA
// qualifiers as nothing, the thread-index variables, and a launch that checks what the GPU
// would refuse or fault on, then queues every thread of the grid on the stream.
#pragma once

#include "tests/cuda_emu/emu.hpp"

#include <cuda_bf16.h>

#include <string>
#include <type_traits>

#undef __global__
#undef __device__
#undef __host__
#define __global__
#define __device__
#define __host__

namespace shardscope::cuda_emu {

struct Dim3 {
    unsigned x = 1, y = 1, z = 1;
};
inline thread_local Dim3 block_idx, thread_idx, block_dim, grid_dim;

/// Faults unless a pointer argument (or a struct's array `p` of them) is memory on `device`.
template <class A>
void check_kernel_argument(const A& a, int device, const char* kernel) {
    auto check = [&](const void* q) {
        if (q && !is_device_range(q, 1, device))
            fault(std::string("kernel ") + kernel + " launched on device " +
                  std::to_string(device) + " is given a pointer that is not memory of that " +
                  "device (host memory, another GPU's, or freed)");
    };
    if constexpr (std::is_pointer_v<A>)
        check(a);
    else if constexpr (requires { a.p[0]; })
        for (const auto* q : a.p)
            check(q);
}

/// kernel<<<blocks, threads, 0, stream>>>(args...).
struct Launch {
    unsigned blocks, threads;
    cudaStream_t stream;
    const char* name;

    template <class... P>
    auto operator()(void (*kernel)(P...)) const {
        return [*this, kernel](auto... args) {
            if (blocks == 0 || blocks > 2147483647u || threads == 0 || threads > 1024) {
                set_last_error(cudaErrorInvalidConfiguration);
                return;
            }
            const int device = stream_device(stream);
            if (device != current_device())
                fault(std::string("kernel ") + name + " launched on a stream of device " +
                      std::to_string(device) + " while device " + std::to_string(current_device()) +
                      " is current (the launch fails)");
            (check_kernel_argument(args, device, name), ...);
            enqueue(stream, [blocks = blocks, threads = threads, kernel, args...] {
                grid_dim = {blocks, 1, 1};
                block_dim = {threads, 1, 1};
                for (unsigned b = 0; b < blocks; ++b)
                    for (unsigned t = 0; t < threads; ++t) {
                        block_idx = {b, 0, 0};
                        thread_idx = {t, 0, 0};
                        kernel(args...);
                    }
            });
        };
    }
};

} // namespace shardscope::cuda_emu

#define blockIdx ::shardscope::cuda_emu::block_idx
#define threadIdx ::shardscope::cuda_emu::thread_idx
#define blockDim ::shardscope::cuda_emu::block_dim
#define gridDim ::shardscope::cuda_emu::grid_dim
#define SHARDSCOPE_LAUNCH(kernel, blocks, stream)                                                  \
    ::shardscope::cuda_emu::Launch{(blocks), 256, (stream), #kernel}(kernel)
