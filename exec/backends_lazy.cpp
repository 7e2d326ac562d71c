// The binary's side of backend_plugins.hpp: device.hpp's and comm.hpp's MPI entry points,
// which load the plugin on first use and forward to it. What only the build knows (whether
// a backend was built, against the emulator) is answered without loading anything, so that
// `--version` stays free of the GPU libraries.
#include "exec/backend_plugins.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <type_traits>

#include <sys/stat.h>

namespace shardscope::exec {

namespace {

bool exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

std::string executable_dir() {
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return "";
    std::string path(buf, static_cast<std::size_t>(n));
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? "" : path.substr(0, slash);
}

/// dlopen of the plugin `name`; "" on success, else dlerror's sentence.
std::string open_plugin(const std::string& name, void*& handle) {
    const std::string path = helper_path(name);
    if (!exists(path)) return "the plugin " + path + " is missing (reinstall shardscope)";
    // RTLD_GLOBAL: Open MPI opens its own components later, which expect libmpi's symbols.
    handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) {
        const char* e = ::dlerror();
        return e != nullptr ? std::string(e) : "dlopen failed on " + path;
    }
    return "";
}

struct Loaded {
    std::once_flag once;
    std::string problem;
    const void* table = nullptr;
};

Loaded& mpi_state() {
    static Loaded s;
    return s;
}
Loaded& gpu_state() {
    static Loaded s;
    return s;
}

const MpiPlugin* mpi_plugin() {
    return static_cast<const MpiPlugin*>(mpi_state().table);
}
const GpuPlugin* gpu_plugin() {
    return static_cast<const GpuPlugin*>(gpu_state().table);
}

[[maybe_unused]] const char* const kNoCuda =
    "this shardscope was built without CUDA (nvcc was not found when it was configured; "
    "install the CUDA toolkit and rebuild with -DSHARDSCOPE_CUDA=ON)";
[[maybe_unused]] const char* const kNoNccl =
    "this shardscope was built without NCCL (nccl.h, libnccl and MPI are needed when it is "
    "configured); --backend cuda runs the ranks on this process's GPUs";

const GpuPlugin& require_gpu() {
    const std::string problem = load_gpu_backend();
    if (!problem.empty()) throw DeviceError(problem);
    return *gpu_plugin();
}

[[maybe_unused]] std::unique_ptr<Communicator> host_make_mpi(const MeshShape& mesh) {
    return make_mpi(mesh);
}
[[noreturn, maybe_unused]] void host_abort_mpi(int code) {
    abort_mpi(code);
}

} // namespace

std::string helper_path(const std::string& name) {
    std::string first;
    auto candidate = [&](const std::string& dir) -> bool {
        if (dir.empty()) return false;
        const std::string path = dir + "/" + name;
        if (first.empty()) first = path;
        return exists(path);
    };
    if (const char* env = std::getenv("SHARDSCOPE_LIBEXEC_DIR"); env != nullptr && *env != '\0')
        if (candidate(env)) return first;
    const std::string self = executable_dir();
    if (candidate(self)) return self + "/" + name;
#ifdef SHARDSCOPE_BUILD_LIBEXEC_DIR
    if (candidate(SHARDSCOPE_BUILD_LIBEXEC_DIR))
        return std::string(SHARDSCOPE_BUILD_LIBEXEC_DIR) + "/" + name;
#endif
    return first.empty() ? name : first;
}

std::string load_mpi_backend() {
    auto& s = mpi_state();
    std::call_once(s.once, [&s] {
#ifdef SHARDSCOPE_MPI_PLUGIN
        void* handle = nullptr;
        s.problem = open_plugin("shardscope-mpi.so", handle);
        if (!s.problem.empty()) {
            s.problem = "the MPI libraries cannot be loaded: " + s.problem +
                        " (install Open MPI's runtime, e.g. the libopenmpi3 package; --backend "
                        "sim runs without it)";
            return;
        }
        auto entry = reinterpret_cast<MpiPluginEntry>(::dlsym(handle, kMpiPluginEntry));
        const MpiPlugin* table = entry != nullptr ? entry() : nullptr;
        if (table == nullptr || table->abi != kPluginAbi) {
            s.problem = "shardscope-mpi.so is from another build of shardscope (reinstall it)";
            return;
        }
        s.table = table;
#else
        s.problem = "this shardscope was built without MPI (install libopenmpi-dev and rebuild)";
#endif
    });
    return s.problem;
}

std::string load_gpu_backend() {
    auto& s = gpu_state();
    std::call_once(s.once, [&s] {
#ifdef SHARDSCOPE_GPU_PLUGIN
        void* handle = nullptr;
        s.problem = open_plugin("shardscope-gpu.so", handle);
        if (!s.problem.empty()) {
            s.problem = "the GPU libraries (CUDA runtime, cuBLAS"
#ifdef SHARDSCOPE_NCCL_PLUGIN
                        ", NCCL"
#endif
                        ") cannot be loaded: " +
                        s.problem + " (install the CUDA runtime; --backend sim runs on the CPU)";
            return;
        }
        auto entry = reinterpret_cast<GpuPluginEntry>(::dlsym(handle, kGpuPluginEntry));
        static const GpuHost host{&host_make_mpi, &host_abort_mpi};
        const GpuPlugin* table = entry != nullptr ? entry(&host) : nullptr;
        if (table == nullptr || table->abi != kPluginAbi) {
            s.problem = "shardscope-gpu.so is from another build of shardscope (reinstall it)";
            return;
        }
        s.table = table;
#else
        s.problem = kNoCuda;
#endif
    });
    return s.problem;
}

// comm.hpp: MPI.

bool launched_by_mpirun() {
    return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

bool mpi_available() {
#ifdef SHARDSCOPE_MPI_PLUGIN
    return true;
#else
    return false;
#endif
}

std::unique_ptr<Communicator> make_mpi(const MeshShape& mesh) {
    const std::string problem = load_mpi_backend();
    if (!problem.empty()) throw DeviceError(problem);
    return mpi_plugin()->make_mpi(mesh);
}

void abort_mpi(int code) {
    // Only a loaded plugin can have initialised MPI.
    if (mpi_plugin() != nullptr) mpi_plugin()->abort_mpi(code);
    std::exit(code);
}

void finalize_mpi() {
    if (mpi_plugin() != nullptr) mpi_plugin()->finalize_mpi();
}

// device.hpp: the GPU backends.

bool cuda_built() {
#ifdef SHARDSCOPE_GPU_PLUGIN
    return true;
#else
    return false;
#endif
}

bool nccl_built() {
#ifdef SHARDSCOPE_NCCL_PLUGIN
    return true;
#else
    return false;
#endif
}

bool cuda_emulated() {
#ifdef SHARDSCOPE_GPU_PLUGIN_EMULATED
    return true;
#else
    return false;
#endif
}

GpuProbe probe_gpus() {
    const std::string problem = load_gpu_backend();
    if (!problem.empty()) return {0, problem};
    return gpu_plugin()->probe_gpus();
}

template <class T>
std::unique_ptr<LocalCompute<T>> make_cuda_compute(int device, bool own_gpu) {
    if constexpr (std::is_same_v<T, float>)
        return require_gpu().make_compute_f32(device, own_gpu);
    else
        return require_gpu().make_compute_f64(device, own_gpu);
}
template std::unique_ptr<LocalCompute<float>> make_cuda_compute(int, bool);
template std::unique_ptr<LocalCompute<double>> make_cuda_compute(int, bool);

void run_cuda(const MeshShape& mesh, const std::function<void(Communicator&, int)>& body) {
    require_gpu().run_cuda(mesh, body);
}

std::unique_ptr<Communicator> make_nccl(const MeshShape& mesh, int& device) {
#if defined(SHARDSCOPE_GPU_PLUGIN) && !defined(SHARDSCOPE_NCCL_PLUGIN)
    (void)mesh;
    (void)device;
    throw DeviceError(kNoNccl);
#else
    return require_gpu().make_nccl(mesh, device);
#endif
}

} // namespace shardscope::exec
