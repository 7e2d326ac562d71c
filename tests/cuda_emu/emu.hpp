// The host CUDA emulator's core, shared by its runtime, cuBLAS, NCCL and kernel-launch parts
// (README.md). Device memory is host memory that the emulator registers; work on a stream is
// queued and runs only when something synchronises with it, so that a missing
// synchronisation gives a wrong answer here instead of passing by luck.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>

namespace shardscope::cuda_emu {

/// Queues `op` on `stream` (null: the current device's default stream); it runs when the
/// stream is synchronised (stream, event or device synchronisation, cudaFree, destroying it).
void enqueue(cudaStream_t stream, std::function<void()> op);
/// Queues work on `stream` that never completes (a collective whose peer is gone): when the
/// stream reaches it, `reached` runs and the stream stops there. cudaStreamQuery then says
/// not ready for ever, and a synchronisation with it faults (a GPU would wait for ever).
void enqueue_stall(cudaStream_t stream, std::function<void()> reached);
/// The device `stream` belongs to (null: the current device).
int stream_device(cudaStream_t stream);
/// The calling thread's current device (cudaSetDevice; 0 at first).
int current_device();
/// Whether [p, p + bytes) lies inside one live device allocation, on `device` (any device
/// when `device` is -1).
bool is_device_range(const void* p, std::size_t bytes, int device = -1);
/// Sets the calling thread's last error (cudaGetLastError), as a failed launch does.
void set_last_error(cudaError_t e);
/// What a real GPU would fault on (an illegal address, a handle used on the wrong device):
/// prints "cuda-emu: " + `what` to stderr and aborts, so that the test fails at the cause.
[[noreturn]] void fault(const std::string& what);

} // namespace shardscope::cuda_emu
