// The backends that need system libraries beyond libc (MPI; CUDA, cuBLAS and NCCL) live in
// plugins, shared libraries that the shardscope binary opens with dlopen on first use
// (shardscope-mpi.so, shardscope-gpu.so, next to the binary). The binary itself links none
// of those libraries, so `check`, `fmt`, `render -o x.svg`, the REPL and `exec --backend sim`
// start in milliseconds and run where they are not installed; where a plugin cannot be
// loaded (its libraries are missing), the backend says so and the command exits 2.
//
// A plugin is self-contained: it links its own copy of the exec code it needs, and hands the
// binary a table of entry points (below) through one extern "C" function. Plugins are built
// with the binary, by the same compiler, from the same sources: the table passes C++ types,
// and `abi` must match exactly (kPluginAbi).
#pragma once

#include "exec/comm.hpp"
#include "exec/device.hpp"

#include <functional>
#include <memory>
#include <string>

namespace shardscope::exec {

/// Bumped whenever a table below changes.
inline constexpr int kPluginAbi = 1;

/// The MPI communicator (comm_mpi.cpp with MPI), from shardscope-mpi.so.
struct MpiPlugin {
    int abi = kPluginAbi;
    std::unique_ptr<Communicator> (*make_mpi)(const MeshShape& mesh) = nullptr;
    void (*abort_mpi)(int code) = nullptr;
    void (*finalize_mpi)() = nullptr;
};
/// The entry point of shardscope-mpi.so.
using MpiPluginEntry = const MpiPlugin* (*)();
inline constexpr const char* kMpiPluginEntry = "shardscope_mpi_plugin";

/// What the GPU plugin needs from the binary: MPI, which its nccl backend bootstraps through
/// (loaded, in turn, on first use).
struct GpuHost {
    std::unique_ptr<Communicator> (*make_mpi)(const MeshShape& mesh) = nullptr;
    void (*abort_mpi)(int code) = nullptr;
};

/// The cuda and nccl backends (device.hpp), from shardscope-gpu.so.
struct GpuPlugin {
    int abi = kPluginAbi;
    GpuProbe (*probe_gpus)() = nullptr;
    std::unique_ptr<LocalCompute<float>> (*make_compute_f32)(int device, bool own_gpu) = nullptr;
    std::unique_ptr<LocalCompute<double>> (*make_compute_f64)(int device, bool own_gpu) = nullptr;
    void (*run_cuda)(const MeshShape& mesh,
                     const std::function<void(Communicator&, int)>& body) = nullptr;
    std::unique_ptr<Communicator> (*make_nccl)(const MeshShape& mesh, int& device) = nullptr;
};
using GpuPluginEntry = const GpuPlugin* (*)(const GpuHost* host);
inline constexpr const char* kGpuPluginEntry = "shardscope_gpu_plugin";

/// Loads the MPI plugin (once). Returns "" when it is loaded, else why not, as a sentence
/// naming the missing library (not built with MPI; the plugin or libmpi cannot be loaded).
std::string load_mpi_backend();
/// The same for the GPU plugin (CUDA runtime, cuBLAS, NCCL).
std::string load_gpu_backend();

/// Where the plugins and helper executables are looked for: $SHARDSCOPE_LIBEXEC_DIR if set,
/// else the directory of the running executable, else the build tree's app/ directory.
/// Returns the path of `name` in the first of those where it exists (or in the first one).
std::string helper_path(const std::string& name);

} // namespace shardscope::exec
