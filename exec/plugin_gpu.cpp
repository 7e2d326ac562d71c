// shardscope-gpu.so: the cuda and nccl backends (cuda_compute.cpp, comm_cuda.cpp,
// comm_nccl.cpp, linked with the CUDA runtime, cuBLAS and NCCL), loaded by the binary on the
// first use of a GPU (backend_plugins.hpp). MPI, which the nccl backend starts its ranks
// through, stays with the binary (its own plugin): make_mpi and abort_mpi here forward to it.
#include "exec/backend_plugins.hpp"

#include <cstdlib>

namespace {

const shardscope::exec::GpuHost* host = nullptr;

} // namespace

namespace shardscope::exec {

std::unique_ptr<Communicator> make_mpi(const MeshShape& mesh) {
    return host->make_mpi(mesh);
}

void abort_mpi(int code) {
    host->abort_mpi(code);
    std::exit(code);
}

} // namespace shardscope::exec

namespace {

using namespace shardscope::exec;

std::unique_ptr<LocalCompute<float>> plugin_compute_f32(int device, bool own_gpu) {
    return make_cuda_compute<float>(device, own_gpu);
}
std::unique_ptr<LocalCompute<double>> plugin_compute_f64(int device, bool own_gpu) {
    return make_cuda_compute<double>(device, own_gpu);
}
void plugin_run_cuda(const MeshShape& mesh, const std::function<void(Communicator&, int)>& body) {
    run_cuda(mesh, body);
}
std::unique_ptr<Communicator> plugin_make_nccl(const MeshShape& mesh, int& device) {
    return make_nccl(mesh, device);
}
GpuProbe plugin_probe_gpus() {
    return probe_gpus();
}

} // namespace

extern "C" __attribute__((visibility("default"))) const GpuPlugin*
shardscope_gpu_plugin(const GpuHost* h) {
    host = h;
    static const GpuPlugin table{kPluginAbi,          &plugin_probe_gpus, &plugin_compute_f32,
                                 &plugin_compute_f64, &plugin_run_cuda,   &plugin_make_nccl};
    return &table;
}
