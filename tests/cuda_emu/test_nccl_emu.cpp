// The emulated NCCL (nccl.cpp) under mpirun -n 4: init, per-axis splits of a 2x2 mesh, the
// collectives and grouped send/receive that exec/comm_nccl.cpp uses, NOCOLOR, errors that must
// fail every rank instead of hanging, faults on host buffers, and that nothing runs before its
// stream is synchronised. A plain program: prints each failed check, exits non-zero.
//
// With NCCL_EMU_STANDALONE this file also provides a minimal stand-in for emu.hpp (queued
// streams flushed by sync(), a registry of device ranges) so that it builds without the
// emulator's runtime:
//   mpicxx -std=c++20 -DNCCL_EMU_STANDALONE -I. -I/usr/local/cuda/include
//     tests/cuda_emu/nccl.cpp tests/cuda_emu/test_nccl_emu.cpp -o /tmp/nccl_emu
//   mpirun -n 4 /tmp/nccl_emu
// Without it, it runs on the emulator's runtime: the host reads and writes device buffers
// directly (emulated device memory is host memory), and it needs 4 emulated devices.
#include "tests/cuda_emu/emu.hpp"

#include <nccl.h>

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace emu = shardscope::cuda_emu;

#ifdef NCCL_EMU_STANDALONE

#include <cstdint>
#include <map>

namespace {
struct StubStream {
    int device;
    std::vector<std::function<void()>> queue;
};
std::map<cudaStream_t, StubStream> stub_streams;
struct StubRange {
    std::uintptr_t begin;
    std::size_t bytes;
    int device;
};
std::vector<StubRange> stub_ranges;
int stub_device = 0;
char stub_handles[16];

StubStream& stub_stream(cudaStream_t s) {
    if (s == nullptr) {
        // The default stream of the current device: one handle per device.
        s = reinterpret_cast<cudaStream_t>(&stub_handles[8 + stub_device]);
        stub_streams.try_emplace(s, StubStream{stub_device, {}});
    }
    return stub_streams.at(s);
}
} // namespace

namespace shardscope::cuda_emu {
void enqueue(cudaStream_t stream, std::function<void()> op) {
    stub_stream(stream).queue.push_back(std::move(op));
}
int stream_device(cudaStream_t stream) {
    return stub_stream(stream).device;
}
int current_device() {
    return stub_device;
}
bool is_device_range(const void* p, std::size_t bytes, int device) {
    const auto x = reinterpret_cast<std::uintptr_t>(p);
    for (const auto& r : stub_ranges)
        if (x >= r.begin && x + bytes <= r.begin + r.bytes && (device == -1 || device == r.device))
            return true;
    return false;
}
void fault(const std::string& what) {
    std::fprintf(stderr, "cuda-emu: %s\n", what.c_str());
    std::abort();
}
} // namespace shardscope::cuda_emu

namespace {
void set_device(int d) {
    stub_device = d;
}
cudaStream_t make_stream() {
    static int next = 0;
    auto s = reinterpret_cast<cudaStream_t>(&stub_handles[next++]);
    stub_streams.emplace(s, StubStream{stub_device, {}});
    return s;
}
void sync(cudaStream_t s) {
    auto queue = std::move(stub_stream(s).queue);
    stub_stream(s).queue.clear();
    for (auto& op : queue)
        op();
}
void* dev_alloc(std::size_t bytes) {
    void* p = std::calloc(bytes, 1);
    stub_ranges.push_back({reinterpret_cast<std::uintptr_t>(p), bytes, stub_device});
    return p;
}
} // namespace

#else // the emulator's runtime

namespace {
void set_device(int d) {
    cudaSetDevice(d);
}
cudaStream_t make_stream() {
    cudaStream_t s = nullptr;
    cudaStreamCreate(&s);
    return s;
}
void sync(cudaStream_t s) {
    cudaStreamSynchronize(s);
}
void* dev_alloc(std::size_t bytes) {
    void* p = nullptr;
    cudaMalloc(&p, bytes);
    cudaMemset(p, 0, bytes);
    cudaDeviceSynchronize();
    return p;
}
} // namespace

#endif

namespace {

int world_rank = 0;
int failures = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "rank %d: FAILED %s:%d: %s\n", world_rank, __FILE__, __LINE__,    \
                         #cond);                                                                   \
            ++failures;                                                                            \
        }                                                                                          \
    } while (0)

#define CHECK_NCCL(call) CHECK((call) == ncclSuccess)

template <class T>
T* alloc(std::size_t n) {
    return static_cast<T*>(dev_alloc(n * sizeof(T)));
}

/// Runs `body` in a forked child (call-time checks only, no MPI there) and checks that it
/// faults with a message containing `expect`.
void expect_fault(const char* label, const std::function<void()>& body, const char* expect) {
    int fds[2];
    if (pipe(fds) != 0) {
        ++failures;
        return;
    }
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        body();
        _exit(0); // no fault: the parent reports it
    }
    close(fds[1]);
    std::string text;
    char buf[512];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;)
        text.append(buf, static_cast<std::size_t>(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    const bool aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
    const bool said = text.find(expect) != std::string::npos;
    if (!aborted || !said) {
        std::fprintf(stderr, "rank %d: FAILED fault check '%s': %s, stderr: %s\n", world_rank,
                     label, aborted ? "aborted" : "did not abort", text.c_str());
        ++failures;
    }
}

ncclComm_t init_world(int rank, int size) {
    ncclUniqueId id{};
    if (rank == 0) CHECK_NCCL(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclComm_t world = nullptr;
    CHECK_NCCL(ncclCommInitRank(&world, size, id, rank));
    return world;
}

void test_error_strings() {
    CHECK(std::strcmp(ncclGetErrorString(ncclSuccess), "no error") == 0);
    CHECK(std::strcmp(ncclGetErrorString(ncclSystemError),
                      "unhandled system error (run with NCCL_DEBUG=INFO for details)") == 0);
    CHECK(std::strcmp(ncclGetErrorString(ncclInvalidArgument),
                      "invalid argument (run with NCCL_DEBUG=WARN for details)") == 0);
    CHECK(std::strcmp(ncclGetErrorString(ncclInvalidUsage),
                      "invalid usage (run with NCCL_DEBUG=WARN for details)") == 0);
}

} // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int rank = world_rank;
    if (size != 4) {
        if (rank == 0) std::fprintf(stderr, "run this test with mpirun -n 4\n");
        MPI_Finalize();
        return 2;
    }
    set_device(rank); // as comm_nccl.cpp: one GPU per process, the node-local rank
    const cudaStream_t stream = make_stream();
    test_error_strings();

    // Init, count and rank.
    ncclComm_t world = init_world(rank, size);
    int n = -1, r = -1;
    CHECK_NCCL(ncclCommCount(world, &n));
    CHECK_NCCL(ncclCommUserRank(world, &r));
    CHECK(n == 4 && r == rank);

    // A 2x2 mesh, split per axis as comm_nccl.cpp does: colour = the other coordinate, key = the
    // coordinate along the axis.
    const int coords[2] = {rank / 2, rank % 2};
    ncclComm_t axis[2] = {nullptr, nullptr};
    CHECK_NCCL(ncclCommSplit(world, coords[1], coords[0], &axis[0], nullptr));
    CHECK_NCCL(ncclCommSplit(world, coords[0], coords[1], &axis[1], nullptr));
    for (int k = 0; k < 2; ++k) {
        CHECK_NCCL(ncclCommCount(axis[k], &n));
        CHECK_NCCL(ncclCommUserRank(axis[k], &r));
        CHECK(n == 2 && r == coords[k]);
    }
    // Keys order the ranks (descending here); equal keys keep the parent's order.
    ncclComm_t reversed = nullptr, tied = nullptr;
    CHECK_NCCL(ncclCommSplit(world, 0, -rank, &reversed, nullptr));
    CHECK_NCCL(ncclCommUserRank(reversed, &r));
    CHECK(r == 3 - rank);
    CHECK_NCCL(ncclCommSplit(world, 7, 0, &tied, nullptr));
    CHECK_NCCL(ncclCommUserRank(tied, &r));
    CHECK(r == rank);
    // NOCOLOR: no communicator.
    ncclComm_t some = reinterpret_cast<ncclComm_t>(&n);
    CHECK_NCCL(ncclCommSplit(world, rank == 0 || rank == 3 ? NCCL_SPLIT_NOCOLOR : 5, rank, &some,
                             nullptr));
    if (rank == 0 || rank == 3)
        CHECK(some == nullptr);
    else {
        CHECK(some != nullptr);
        CHECK_NCCL(ncclCommCount(some, &n));
        CHECK(n == 2);
    }
    ncclCommDestroy(some);
    // A bad colour on one rank fails the split on every rank (none waits for it).
    ncclComm_t bad = nullptr;
    CHECK(ncclCommSplit(world, rank == 2 ? -5 : 0, 0, &bad, nullptr) == ncclInvalidArgument);

    // All-reduce (sum, in place, float32) over the world: nothing before the sync.
    {
        const std::size_t cnt = 5;
        float* b = alloc<float>(cnt);
        for (std::size_t i = 0; i < cnt; ++i)
            b[i] = static_cast<float>(rank + i);
        CHECK_NCCL(ncclAllReduce(b, b, cnt, ncclFloat32, ncclSum, world, stream));
        bool untouched = true;
        for (std::size_t i = 0; i < cnt; ++i)
            untouched &= b[i] == static_cast<float>(rank + i);
        CHECK(untouched);
        sync(stream);
        for (std::size_t i = 0; i < cnt; ++i)
            CHECK(b[i] == static_cast<float>(6 + 4 * i));
    }
    // All-reduce max, out of place, float64, along axis 0 (ranks {0,2} and {1,3}).
    {
        double* s = alloc<double>(3);
        double* d = alloc<double>(3);
        for (int i = 0; i < 3; ++i)
            s[i] = rank * (i % 2 == 0 ? 1.0 : -1.0);
        CHECK_NCCL(ncclAllReduce(s, d, 3, ncclFloat64, ncclMax, axis[0], stream));
        CHECK(d[0] == 0 && d[1] == 0 && d[2] == 0);
        sync(stream);
        const int hi = coords[1] + 2, lo = coords[1];
        CHECK(d[0] == hi && d[1] == -lo && d[2] == hi);
        CHECK(s[0] == rank); // the input is untouched
    }
    // All-gather along axis 1 (ranks {0,1} and {2,3}), out of place and in place.
    {
        const int cnt = 3;
        float* s = alloc<float>(cnt);
        float* d = alloc<float>(2 * cnt);
        for (int i = 0; i < cnt; ++i)
            s[i] = static_cast<float>(10 * rank + i);
        CHECK_NCCL(ncclAllGather(s, d, cnt, ncclFloat32, axis[1], stream));
        CHECK(d[0] == 0 && d[5] == 0);
        sync(stream);
        for (int m = 0; m < 2; ++m)
            for (int i = 0; i < cnt; ++i)
                CHECK(d[m * cnt + i] == static_cast<float>(10 * (2 * coords[0] + m) + i));
        double* inplace = alloc<double>(2 * cnt);
        for (int i = 0; i < cnt; ++i)
            inplace[coords[1] * cnt + i] = 100.0 * rank + i;
        CHECK_NCCL(
            ncclAllGather(inplace + coords[1] * cnt, inplace, cnt, ncclFloat64, axis[1], stream));
        sync(stream);
        for (int m = 0; m < 2; ++m)
            for (int i = 0; i < cnt; ++i)
                CHECK(inplace[m * cnt + i] == 100.0 * (2 * coords[0] + m) + i);
    }
    // Reduce-scatter over the world: sum (float64, out of place), max (float32, in place).
    {
        const int cnt = 2;
        double* s = alloc<double>(4 * cnt);
        double* d = alloc<double>(cnt);
        for (int j = 0; j < 4 * cnt; ++j)
            s[j] = 100.0 * rank + j;
        CHECK_NCCL(ncclReduceScatter(s, d, cnt, ncclFloat64, ncclSum, world, stream));
        CHECK(d[0] == 0 && d[1] == 0);
        sync(stream);
        for (int i = 0; i < cnt; ++i)
            CHECK(d[i] == 600.0 + 4.0 * (cnt * rank + i));
        float* f = alloc<float>(4 * cnt);
        for (int j = 0; j < 4 * cnt; ++j)
            f[j] = static_cast<float>(j * (rank == 1 ? 2 : 1));
        CHECK_NCCL(ncclReduceScatter(f, f + rank * cnt, cnt, ncclFloat32, ncclMax, world, stream));
        sync(stream);
        for (int i = 0; i < cnt; ++i)
            CHECK(f[rank * cnt + i] == 2.0f * (cnt * rank + i));
        // The other blocks of the in-place send buffer are left as they were.
        const int other = (rank + 1) % 4;
        CHECK(f[other * cnt] == static_cast<float>(other * cnt * (rank == 1 ? 2 : 1)));
    }
    // Send/receive in a group: a ring, then comm_nccl.cpp's all-to-all (self included).
    {
        const int cnt = 4;
        float* s = alloc<float>(cnt);
        float* d = alloc<float>(cnt);
        for (int i = 0; i < cnt; ++i)
            s[i] = static_cast<float>(rank * 10 + i);
        CHECK_NCCL(ncclGroupStart());
        CHECK_NCCL(ncclSend(s, cnt, ncclFloat32, (rank + 1) % 4, world, stream));
        CHECK_NCCL(ncclRecv(d, cnt, ncclFloat32, (rank + 3) % 4, world, stream));
        CHECK_NCCL(ncclGroupEnd());
        CHECK(d[0] == 0);
        sync(stream);
        for (int i = 0; i < cnt; ++i)
            CHECK(d[i] == static_cast<float>(((rank + 3) % 4) * 10 + i));

        double* a = alloc<double>(4 * cnt);
        double* b = alloc<double>(4 * cnt);
        for (int q = 0; q < 4; ++q)
            for (int i = 0; i < cnt; ++i)
                a[q * cnt + i] = 1000.0 * rank + 10 * q + i;
        CHECK_NCCL(ncclGroupStart());
        for (int q = 0; q < 4; ++q) {
            CHECK_NCCL(ncclSend(a + q * cnt, cnt, ncclFloat64, q, world, stream));
            CHECK_NCCL(ncclRecv(b + q * cnt, cnt, ncclFloat64, q, world, stream));
        }
        CHECK_NCCL(ncclGroupEnd());
        sync(stream);
        for (int q = 0; q < 4; ++q)
            for (int i = 0; i < cnt; ++i)
                CHECK(b[q * cnt + i] == 1000.0 * q + 10 * rank + i);
    }
    // Nested groups: only the outermost end queues anything; a collective on another
    // communicator can share the group.
    {
        float* s = alloc<float>(1);
        float* d = alloc<float>(1);
        float* x = alloc<float>(1);
        s[0] = static_cast<float>(rank + 1);
        x[0] = static_cast<float>(rank + 1);
        const int partner = 1 - coords[1]; // along axis 1: world rank rank ^ 1
        CHECK_NCCL(ncclGroupStart());
        CHECK_NCCL(ncclGroupStart());
        CHECK_NCCL(ncclSend(s, 1, ncclFloat32, partner, axis[1], stream));
        CHECK_NCCL(ncclRecv(d, 1, ncclFloat32, partner, axis[1], stream));
        CHECK_NCCL(ncclGroupEnd());
        sync(stream);
        CHECK(d[0] == 0);
        CHECK_NCCL(ncclAllReduce(x, x, 1, ncclFloat32, ncclSum, world, stream));
        CHECK_NCCL(ncclGroupEnd());
        CHECK(d[0] == 0 && x[0] == static_cast<float>(rank + 1));
        sync(stream);
        CHECK(d[0] == static_cast<float>((rank ^ 1) + 1));
        CHECK(x[0] == 10.0f);
    }
    // Usage errors that return at once.
    CHECK(ncclGroupEnd() == ncclInvalidUsage);
    {
        float* s = alloc<float>(1);
        CHECK(ncclSend(s, 1, ncclFloat32, 4, world, stream) == ncclInvalidArgument);
        CHECK(ncclRecv(s, 1, ncclFloat32, -1, world, stream) == ncclInvalidArgument);
        CHECK(ncclAllReduce(s, s, 1, ncclFloat32, ncclSum, nullptr, stream) == ncclInvalidArgument);
        CHECK(ncclAllReduce(s, s, 1, ncclFloat16, ncclSum, world, stream) == ncclInvalidArgument);
        // A failed call inside a group fails the group's end, and nothing is queued.
        CHECK_NCCL(ncclGroupStart());
        CHECK_NCCL(ncclSend(s, 1, ncclFloat32, 0, world, stream));
        CHECK(ncclSend(s, 1, ncclFloat32, 9, world, stream) == ncclInvalidArgument);
        CHECK(ncclGroupEnd() == ncclInvalidArgument);
        sync(stream); // would hang (or fail) if the dropped group's send had been queued
    }
    // Init with a bad nranks on every rank, then with an id no one else has: every rank fails,
    // none hangs.
    {
        ncclUniqueId id{};
        if (rank == 0) ncclGetUniqueId(&id);
        MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
        ncclComm_t c = nullptr;
        CHECK(ncclCommInitRank(&c, 3, id, rank) == ncclInvalidArgument);
        ncclUniqueId own{};
        ncclGetUniqueId(&own);
        CHECK(ncclCommInitRank(&c, 4, own, rank) == ncclInvalidArgument);
        ncclUniqueId zero{};
        CHECK(ncclCommInitRank(&c, 4, zero, rank) == ncclInvalidArgument);
    }
    // Two communicators from two ids at once: {0, 1} and {2, 3}, ranks given in reverse.
    {
        ncclUniqueId ids[2] = {};
        if (rank == 0) ncclGetUniqueId(&ids[0]);
        if (rank == 2) ncclGetUniqueId(&ids[1]);
        MPI_Bcast(&ids[0], sizeof ids[0], MPI_BYTE, 0, MPI_COMM_WORLD);
        MPI_Bcast(&ids[1], sizeof ids[1], MPI_BYTE, 2, MPI_COMM_WORLD);
        ncclComm_t pair = nullptr;
        CHECK_NCCL(ncclCommInitRank(&pair, 2, ids[rank / 2], 1 - rank % 2));
        CHECK_NCCL(ncclCommUserRank(pair, &r));
        CHECK(r == 1 - rank % 2);
        int* v = alloc<int>(1);
        v[0] = rank;
        CHECK_NCCL(ncclAllReduce(v, v, 1, ncclInt32, ncclSum, pair, stream));
        sync(stream);
        CHECK(v[0] == (rank / 2 == 0 ? 1 : 5));
        // Destroyed with an operation still queued: it still runs at the sync.
        v[0] = rank;
        CHECK_NCCL(ncclAllReduce(v, v, 1, ncclInt32, ncclMax, pair, stream));
        CHECK_NCCL(ncclCommDestroy(pair));
        sync(stream);
        CHECK(v[0] == (rank / 2 == 0 ? 1 : 3));
    }
    // Faults at call time (rank 0, in forked children): host buffers, another device's buffer
    // or stream, overlapping buffers.
    if (rank == 0) {
        static float host[4];
        float* dev = alloc<float>(8);
        set_device(1);
        float* other = alloc<float>(4);
        const cudaStream_t other_stream = make_stream();
        set_device(0);
        expect_fault(
            "host send buffer",
            [&] { ncclAllReduce(host, dev, 4, ncclFloat32, ncclSum, world, stream); },
            "ncclAllReduce: sendbuff");
        expect_fault(
            "host buffer", [&] { ncclSend(host, 4, ncclFloat32, 1, world, stream); },
            "is not device memory");
        expect_fault(
            "another device's buffer", [&] { ncclRecv(other, 4, ncclFloat32, 1, world, stream); },
            "another device");
        expect_fault(
            "past the allocation",
            [&] { ncclAllGather(dev, dev + 4, 4, ncclFloat32, world, stream); },
            "runs past the end");
        expect_fault(
            "another device's stream",
            [&] { ncclAllReduce(dev, dev, 4, ncclFloat32, ncclSum, world, other_stream); },
            "stream belongs to device 1");
        expect_fault(
            "overlap", [&] { ncclAllReduce(dev, dev + 2, 4, ncclFloat32, ncclSum, world, stream); },
            "overlap");
    }
    // Mismatches that fault (NCCL would hang or mix the data up), only when asked since the
    // fault aborts the whole job: NCCL_EMU_TEST_MISMATCH=collective: an all-reduce with
    // different counts; =p2p: a receive longer than its send; =p2p-long: the reverse.
    if (const char* m = std::getenv("NCCL_EMU_TEST_MISMATCH"); m != nullptr) {
        float* b = alloc<float>(8);
        if (std::strncmp(m, "p2p", 3) == 0) {
            const bool longer = std::strcmp(m, "p2p-long") == 0; // a send longer than its receive
            CHECK_NCCL(ncclGroupStart());
            if (rank == 0) CHECK_NCCL(ncclSend(b, longer ? 4 : 2, ncclFloat32, 1, world, stream));
            if (rank == 1) CHECK_NCCL(ncclRecv(b, longer ? 2 : 4, ncclFloat32, 0, world, stream));
            CHECK_NCCL(ncclGroupEnd());
        } else {
            CHECK_NCCL(ncclAllReduce(b, b, rank == 0 ? 4 : 8, ncclFloat32, ncclSum, world, stream));
        }
        sync(stream);
        MPI_Barrier(MPI_COMM_WORLD);
        std::fprintf(stderr, "rank %d: FAILED: the mismatch (%s) did not fault\n", rank, m);
        ++failures;
    }

    for (int k = 0; k < 2; ++k)
        ncclCommDestroy(axis[k]);
    ncclCommDestroy(reversed);
    ncclCommDestroy(tied);
    ncclCommDestroy(world);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) std::printf("test_nccl_emu: all checks passed on 4 ranks\n");
    if (rank == 0 && total != 0) std::printf("test_nccl_emu: %d checks failed\n", total);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
