// shardscope-mpi.so: the MPI communicator (comm_mpi.cpp, linked with libmpi), loaded by the
// binary on the first `exec --backend mpi` (backend_plugins.hpp).
#include "exec/backend_plugins.hpp"

namespace {

std::unique_ptr<shardscope::exec::Communicator>
plugin_make_mpi(const shardscope::exec::MeshShape& mesh) {
    return shardscope::exec::make_mpi(mesh);
}
void plugin_abort_mpi(int code) {
    shardscope::exec::abort_mpi(code);
}
void plugin_finalize_mpi() {
    shardscope::exec::finalize_mpi();
}

} // namespace

extern "C" __attribute__((visibility("default"))) const shardscope::exec::MpiPlugin*
shardscope_mpi_plugin() {
    static const shardscope::exec::MpiPlugin table{shardscope::exec::kPluginAbi, &plugin_make_mpi,
                                                   &plugin_abort_mpi, &plugin_finalize_mpi};
    return &table;
}
