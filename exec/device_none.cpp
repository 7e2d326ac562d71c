// The GPU backends in a build without CUDA: every entry point says the build lacks it.
#include "exec/device.hpp"

namespace shardscope::exec {

namespace {
const char* const kNoCuda = "this shardscope was built without CUDA (nvcc was not found when it "
                            "was configured; install the CUDA toolkit and rebuild with "
                            "-DSHARDSCOPE_CUDA=ON)";
}

bool cuda_built() {
    return false;
}
bool nccl_built() {
    return false;
}
bool cuda_emulated() {
    return false;
}

GpuProbe probe_gpus() {
    return {0, kNoCuda};
}

template <class T>
std::unique_ptr<LocalCompute<T>> make_cuda_compute(int, bool) {
    throw DeviceError(kNoCuda);
}
template std::unique_ptr<LocalCompute<float>> make_cuda_compute(int, bool);
template std::unique_ptr<LocalCompute<double>> make_cuda_compute(int, bool);

void run_cuda(const MeshShape&, const std::function<void(Communicator&, int)>&) {
    throw DeviceError(kNoCuda);
}

std::unique_ptr<Communicator> make_nccl(const MeshShape&, int&) {
    throw DeviceError(kNoCuda);
}

} // namespace shardscope::exec
