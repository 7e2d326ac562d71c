// The GPU backends' entry points: `cuda` (virtual ranks on this process's GPUs, collectives
// as device copies and reduction kernels) and `nccl` (one process per GPU under mpirun). Always
// declared; where the build has no CUDA (device_none.cpp) they say so instead of running.
#pragma once

#include "exec/comm.hpp"
#include "exec/compute.hpp"

#include <functional>
#include <memory>
#include <string>

namespace shardscope::exec {

/// A GPU backend cannot run here or failed on the device (no GPU or driver, out of device
/// memory, a CUDA, cuBLAS or NCCL error, fewer GPUs than NCCL ranks): the command line exits
/// with its usage code (2), not as a failed verification.
struct DeviceError : ExecError {
    using ExecError::ExecError;
};

/// Whether this binary has the cuda backend (built where nvcc was found) and the nccl one.
bool cuda_built();
bool nccl_built();
/// Whether they are built against the tests' host emulator of CUDA, cuBLAS and NCCL
/// (tests/cuda_emu, -DSHARDSCOPE_CUDA=EMU) rather than the real libraries: a test build.
bool cuda_emulated();

/// The GPUs this process can use: their count, or why there are none (no driver, no device,
/// built without CUDA), as a sentence for the user.
struct GpuProbe {
    int devices = 0;
    std::string problem; ///< empty when devices > 0
};
GpuProbe probe_gpus();

/// Why `backend` ("cuda" or "nccl") cannot run a mesh of `ranks` ranks with `devices` GPUs
/// visible (to this process, or on this node for nccl), or "" when it can. cuda runs any
/// number of virtual ranks on one or more GPUs; NCCL refuses two ranks on one GPU.
std::string gpu_shortage(const std::string& backend, int ranks, int devices);

/// The GPU that virtual rank `rank` runs on, with `devices` GPUs: ranks spread round-robin.
int device_of_rank(int rank, int devices);

/// Local compute on GPU `device` (its own stream and cuBLAS handle; call from the thread that
/// uses it). Throws ExecError where the build has no CUDA or the device cannot be used. Its
/// tensors come from the stream-ordered pool unless another GPU of this process may read them
/// (cuda on several GPUs); `own_gpu`: none will (nccl, one GPU per process).
template <class T>
std::unique_ptr<LocalCompute<T>> make_cuda_compute(int device, bool own_gpu = false);

/// As run_sim, with every rank's collectives on the GPUs: rank r's thread runs on GPU
/// device_of_rank(r, count); buffers may be device or host pointers; staging, copies and
/// reductions are on the device. `body` gets the rank's GPU.
void run_cuda(const MeshShape& mesh, const std::function<void(Communicator&, int device)>& body);

/// Under mpirun: this process's NCCL communicator over `mesh` (one GPU per process: the
/// node-local rank picks it; NCCL communicators per mesh axis split from one world
/// communicator bootstrapped through MPI). Buffers may be device or host pointers. Throws
/// ExecError with gpu_shortage's message when the node has fewer GPUs than ranks on it.
/// `device` receives the GPU this process uses.
std::unique_ptr<Communicator> make_nccl(const MeshShape& mesh, int& device);

} // namespace shardscope::exec
