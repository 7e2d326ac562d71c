// The parts of the GPU backends that need no CUDA: rank placement and the GPU-count check.
#include "exec/device.hpp"

namespace shardscope::exec {

std::string gpu_shortage(const std::string& backend, int ranks, int devices) {
    if (devices <= 0)
        return "--backend " + backend + " needs an NVIDIA GPU and none is usable here";
    if (backend == "nccl" && devices < ranks)
        return "--backend nccl runs one rank per GPU and NCCL refuses two ranks on one GPU, but "
               "this node has " +
               std::to_string(devices) + (devices == 1 ? " GPU" : " GPUs") + " for " +
               std::to_string(ranks) +
               " ranks: use --backend cuda (virtual ranks share the GPUs of one process)";
    return "";
}

int device_of_rank(int rank, int devices) {
    return devices > 0 ? rank % devices : 0;
}

} // namespace shardscope::exec
