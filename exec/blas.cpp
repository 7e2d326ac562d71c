// OpenBLAS, loaded with dlopen on the first GEMM rather than linked, and the address-space
// accounting that keeps it from hanging under a virtual-memory limit: see blas.hpp.
#include "exec/blas.hpp"

#include "exec/kernels.hpp"

#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace shardscope::exec {
namespace {

// ---- OpenBLAS, loaded on first use ---------------------------------------------------------
//
// OpenBLAS is opened with dlopen when the first GEMM (or reserve_blas_callers) needs it, not
// linked: its constructor starts a thread pool (a thread per core), and each pool thread and
// each thread calling GEMM maps a BUFFER_SIZE buffer (128 MiB on x86-64) that OpenBLAS keeps
// for the process's life. OpenBLAS retries a failed buffer mapping forever (blas_memory_alloc
// in driver/others/memory.c loops until mmap or malloc succeeds), so under a virtual-memory
// limit (ulimit -v) that cannot hold them a process spins and, at exit, hangs joining the pool.
// Linked, every command (even --version) paid for the pool; loaded here, only exec does, and
// under a limit it starts no helper threads (OPENBLAS_NUM_THREADS=1, unless the user set it),
// checks that the address space left holds what OpenBLAS will map, and has OpenBLAS map the
// buffers of every thread that may call GEMM at once right away (map_blas_buffers), failing
// with a message when they do not fit.

#ifndef SHARDSCOPE_OPENBLAS_SONAME
#define SHARDSCOPE_OPENBLAS_SONAME "libopenblas.so.0"
#endif

constexpr std::uint64_t kMiB = 1024 * 1024;
// OpenBLAS's per-thread buffer (BUFFER_SIZE, 32 << 22 on x86-64, plus a page), the library's
// own mappings (about 37 MiB: its image and tables, libgfortran), and room for the allocator's
// segments of the threads that start.
constexpr std::uint64_t kBlasBuffer = 128 * kMiB + 4096;
constexpr std::uint64_t kBlasImage = 48 * kMiB;
constexpr std::uint64_t kBlasMargin = 64 * kMiB;

struct BlasState {
    std::mutex mutex;
    std::atomic<bool> ready{false}; // the pointers below are set
    void* handle = nullptr;
    decltype(&cblas_sgemm) sgemm = nullptr;
    decltype(&cblas_dgemm) dgemm = nullptr;
    decltype(&openblas_set_num_threads) set_threads = nullptr;
    // OpenBLAS's buffer pool (exported, not in cblas.h); null if the library lacks them.
    void* (*memory_alloc)(int) = nullptr;
    void (*memory_free)(void*) = nullptr;
    int pool = 1;    // OpenBLAS's threads, the caller's included
    int callers = 0; // threads that may call GEMM at once, accounted for
};

BlasState& blas_state() {
    static BlasState s;
    return s;
}

// RLIMIT_AS's soft limit, or 0 when there is none.
std::uint64_t address_space_limit() {
    rlimit r{};
    if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return 0;
    return r.rlim_cur;
}

// The process's mapped address space now (VmSize), in bytes.
std::uint64_t address_space_used() {
    unsigned long long pages = 0;
    if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%llu", &pages) != 1) pages = 0;
        std::fclose(f);
    }
    return pages * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

std::uint64_t thread_stack_size() {
    rlimit r{};
    if (getrlimit(RLIMIT_STACK, &r) != 0 || r.rlim_cur == RLIM_INFINITY || r.rlim_cur == 0)
        return 8 * kMiB;
    return r.rlim_cur;
}

// The thread count the user asked OpenBLAS for, in the variables it reads; 0 if none.
int requested_blas_threads() {
    for (const char* name : {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"}) {
        if (const char* v = std::getenv(name)) {
            const int n = std::atoi(v);
            if (n > 0) return n;
        }
    }
    return 0;
}

std::string mib_text(std::uint64_t bytes) {
    return std::to_string((bytes + kMiB - 1) / kMiB) + " MiB";
}

[[noreturn]] void too_little_address_space(std::uint64_t limit, std::uint64_t used,
                                           std::uint64_t need, int callers, int pool) {
    throw ResourceError(
        "out of memory: OpenBLAS needs about " + mib_text(need) +
        " more address space (a 128 MiB buffer for each of " + std::to_string(callers) + " thread" +
        (callers > 1 ? "s" : "") + " calling it at once" +
        (pool > 1 ? " and each of its " + std::to_string(pool - 1) + " helper threads" : "") +
        "), but the virtual-memory limit (ulimit -v) of " + mib_text(limit) + " leaves " +
        mib_text(limit > used ? limit - used : 0) + "; raise the limit (ulimit -v " +
        std::to_string((used + need) / 1024 + 1) + " or more) or run fewer ranks");
}

// Under a limit: makes OpenBLAS map the buffers of `callers` threads calling GEMM at once now,
// while a failure can still be reported, instead of in some rank's first GEMM, where it would
// loop forever (the ranks' own allocations may have taken the room by then). A probe mapping
// first says whether they fit; OpenBLAS then keeps them and hands a free one to each GEMM.
void map_blas_buffers(BlasState& s, int callers, std::uint64_t limit, int pool) {
    if (!s.memory_alloc || !s.memory_free) return;
    const std::uint64_t size = static_cast<std::uint64_t>(callers) * kBlasBuffer + kBlasMargin;
    void* probe =
        mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (probe == MAP_FAILED) {
        const std::uint64_t used = address_space_used();
        too_little_address_space(limit, used, size, callers, pool);
    }
    munmap(probe, size);
    std::vector<void*> held;
    held.reserve(static_cast<std::size_t>(callers));
    for (int i = 0; i < callers; ++i)
        held.push_back(s.memory_alloc(0));
    for (void* b : held)
        s.memory_free(b);
}

// Loads OpenBLAS and accounts for `callers` threads calling GEMM at once; s.mutex held.
void blas_reserve_locked(BlasState& s, int callers) {
    callers = std::max(1, callers);
    if (s.handle && callers <= s.callers) return;
    const std::uint64_t limit = address_space_limit();
    const std::uint64_t used = address_space_used();
    const std::uint64_t room = limit > used ? limit - used : 0;
    if (!s.handle) {
        int pool = requested_blas_threads();
        const bool chosen = pool > 0;
        // Under a limit, no helper threads unless the user asks for them: each maps its buffer
        // as it starts, after dlopen returns, racing the buffers mapped below.
        if (!chosen) pool = limit != 0 ? 1 : std::max(1u, std::thread::hardware_concurrency());
        const std::uint64_t per_thread = kBlasBuffer + thread_stack_size();
        const auto need = [&](int threads) {
            return kBlasImage + kBlasMargin + static_cast<std::uint64_t>(callers) * kBlasBuffer +
                   static_cast<std::uint64_t>(threads - 1) * per_thread;
        };
        if (limit != 0) {
            if (need(pool) > room) too_little_address_space(limit, used, need(pool), callers, pool);
            // The pool's size is read from the environment when the library loads.
            if (!chosen) setenv("OPENBLAS_NUM_THREADS", std::to_string(pool).c_str(), 1);
        }
        void* h = dlopen(SHARDSCOPE_OPENBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char* e = dlerror();
            throw ResourceError(
                std::string("cannot load OpenBLAS (" SHARDSCOPE_OPENBLAS_SONAME "): ") +
                (e ? e : "unknown error"));
        }
        if (limit != 0 && !chosen) unsetenv("OPENBLAS_NUM_THREADS");
        s.sgemm = reinterpret_cast<decltype(s.sgemm)>(dlsym(h, "cblas_sgemm"));
        s.dgemm = reinterpret_cast<decltype(s.dgemm)>(dlsym(h, "cblas_dgemm"));
        s.set_threads =
            reinterpret_cast<decltype(s.set_threads)>(dlsym(h, "openblas_set_num_threads"));
        if (!s.sgemm || !s.dgemm || !s.set_threads)
            throw ResourceError("cannot load OpenBLAS (" SHARDSCOPE_OPENBLAS_SONAME
                                "): cblas_sgemm, cblas_dgemm or openblas_set_num_threads missing");
        s.memory_alloc = reinterpret_cast<decltype(s.memory_alloc)>(dlsym(h, "blas_memory_alloc"));
        s.memory_free = reinterpret_cast<decltype(s.memory_free)>(dlsym(h, "blas_memory_free"));
        s.handle = h;
        s.pool = pool;
        if (limit != 0) map_blas_buffers(s, callers, limit, pool);
        s.callers = callers;
        s.ready.store(true, std::memory_order_release);
        return;
    }
    // More threads calling at once: a buffer each.
    const std::uint64_t more = static_cast<std::uint64_t>(callers - s.callers) * kBlasBuffer;
    if (limit != 0 && more + kBlasMargin > room)
        too_little_address_space(limit, used, more + kBlasMargin, callers, s.pool);
    if (limit != 0) map_blas_buffers(s, callers, limit, s.pool);
    s.callers = callers;
}

BlasState& blas() {
    auto& s = blas_state();
    if (!s.ready.load(std::memory_order_acquire)) {
        const std::lock_guard<std::mutex> lock(s.mutex);
        blas_reserve_locked(s, 1);
    }
    return s;
}

} // namespace

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float* a, int lda,
          const float* b, int ldb, float* c, int ldc) {
    blas().sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const double* a, int lda,
          const double* b, int ldb, double* c, int ldc) {
    blas().dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}

void set_blas_threads(int n) {
    auto& s = blas_state();
    const std::lock_guard<std::mutex> lock(s.mutex);
    blas_reserve_locked(s, 1);
    // Never past the pool that was sized to fit (a new pool thread maps its buffer).
    s.set_threads(std::clamp(n, 1, s.pool));
}

void reserve_blas_callers(int callers) {
    auto& s = blas_state();
    const std::lock_guard<std::mutex> lock(s.mutex);
    blas_reserve_locked(s, callers);
}

} // namespace shardscope::exec
