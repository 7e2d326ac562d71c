// The nccl backend in a CUDA build that found no NCCL or no MPI: it says so at run time.
#include "exec/device.hpp"

namespace shardscope::exec {

std::unique_ptr<Communicator> make_nccl(const MeshShape&, int&) {
    throw DeviceError(
        "this shardscope was built without NCCL (nccl.h, libnccl and MPI are needed "
        "when it is configured); --backend cuda runs the ranks on this process's GPUs");
}

} // namespace shardscope::exec
