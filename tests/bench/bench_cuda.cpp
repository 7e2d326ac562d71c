// The cuda backend on a GPU (built only with CUDA; run by scripts/device_build.sh):
//  1. local einsum throughput as a ratio of one plain cuBLAS GEMM on the same shapes, f32 and
//     bf16, timed by CUDA events (target >= 0.9 for large matmuls);
//  2. virtual-rank collective bandwidth (8 ranks on GPU 0, device buffers) as a ratio of
//     device-to-device memcpy bandwidth over the same bytes (target >= 0.8);
//  3. the tensor-parallel MLP at d=8192 f=32768 on 8 virtual ranks, as a ratio of the same
//     program unsharded (1 rank) on the same GPU.
// Usage: bench_cuda [einsum|collectives|mlp|all] [REPEATS] [--smoke]
// --smoke: every large extent (>= 2048) and byte count divided by 32 (1024 for the bytes), so
// that the code paths run in seconds, e.g. on the tests' host CUDA emulator (tests/cuda_emu),
// where the figures mean nothing.
#include "bench_util.hpp"

#include "exec/cuda_util.hpp"
#include "exec/device.hpp"
#include "exec/interpreter.hpp"
#include "exec/layout.hpp"
#include "parser/parser.hpp"
#include "semantics/checker.hpp"

#include <cuda_bf16.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

using namespace shardscope;
using namespace shardscope::exec;
using bench::seconds_since;
using Clock = std::chrono::steady_clock;

namespace {

int repeats = 5;
std::int64_t shrink = 1; // --smoke: 32

/// An extent of the benchmark's shapes, shrunk for --smoke.
std::int64_t ext(std::int64_t x) {
    return x >= 2048 ? x / shrink : x;
}

/// Best of `repeats` timings of `f` on the context's stream, in seconds (CUDA events).
template <class F>
double best_of(const cuda::Context& c, F&& f) {
    cudaEvent_t a, b;
    cuda::check(cudaEventCreate(&a), "event");
    cuda::check(cudaEventCreate(&b), "event");
    f(); // warm-up (cuBLAS heuristics, pool growth)
    c.sync();
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
        cuda::check(cudaEventRecord(a, c.stream()), "event");
        f();
        cuda::check(cudaEventRecord(b, c.stream()), "event");
        cuda::check(cudaEventSynchronize(b), "event");
        float ms = 0;
        cuda::check(cudaEventElapsedTime(&ms, a, b), "event");
        best = std::min(best, ms / 1e3);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return best;
}

template <class T>
cuda::DeviceTensor<T> device_tensor(std::vector<std::int64_t> shape, std::vector<int> labels,
                                    const cuda::Context& c) {
    std::int64_t n = 1;
    for (auto e : shape)
        n *= e;
    cuda::DeviceTensor<T> t{shape, labels, cuda::Buffer(static_cast<std::size_t>(n) * sizeof(T))};
    // Small values (bf16 and f32 alike): the bytes of 0x3c (about 0.01), enough for timing.
    cuda::check(cudaMemsetAsync(t.ptr(), 0x3c, t.data.bytes(), c.stream()), "fill");
    return t;
}

struct Case {
    const char* what;
    std::vector<std::int64_t> a_shape, b_shape;
    std::vector<int> a, b, out;
    std::int64_t batch, m, n, k;
};

template <class T>
void einsum_bench(const char* type, cudaDataType_t dt) {
    cuda::Context c(0);
    // Labels: 0=b 1=s 2=d 3=f 4=h
    // One shape per line: batch, m, n, k are the GEMM's.
    // clang-format off
    const std::vector<Case> cases = {
        {"bsd,df->bsf (x·W, 16k tokens)", {8, 2048, 4096}, {4096, 16384}, {0, 1, 2}, {2, 3}, {0, 1, 3}, 1, 16384, 16384, 4096},
        {"bsf,fd->bsd (h·W2)", {8, 2048, 16384}, {16384, 4096}, {0, 1, 3}, {3, 2}, {0, 1, 2}, 1, 16384, 4096, 16384},
        {"ij,jk->ik 8192^3", {8192, 8192}, {8192, 8192}, {1, 2}, {2, 3}, {1, 3}, 1, 8192, 8192, 8192},
        {"bsd,fd->bsf (W stored [out, in]: read transposed)", {8, 2048, 4096}, {16384, 4096}, {0, 1, 2}, {3, 2}, {0, 1, 3}, 1, 16384, 16384, 4096},
        {"sbd,df->bsf (x stored [s, b, d]: permuted first)", {2048, 8, 4096}, {4096, 16384}, {1, 0, 2}, {2, 3}, {0, 1, 3}, 1, 16384, 16384, 4096},
        {"hsd,htd->hst (batched, 32 heads)", {32, 2048, 128}, {32, 2048, 128}, {4, 1, 2}, {4, 3, 2}, {4, 1, 3}, 32, 2048, 2048, 128},
    };
    // clang-format on
    std::printf("einsum vs cuBLAS GEMM, %s (best of %d, CUDA events)\n", type, repeats);
    std::printf("  %-52s %10s %10s %7s\n", "shape", "einsum", "cuBLAS", "ratio");
    for (const auto& k : cases) {
        std::vector<std::int64_t> a_shape, b_shape;
        for (auto e : k.a_shape)
            a_shape.push_back(ext(e));
        for (auto e : k.b_shape)
            b_shape.push_back(ext(e));
        const std::int64_t batch = ext(k.batch), m = ext(k.m), n = ext(k.n), kk = ext(k.k);
        const auto a = device_tensor<T>(a_shape, k.a, c);
        const auto b = device_tensor<T>(b_shape, k.b, c);
        const double t_ein = best_of(c, [&] { cuda::einsum<T>({&a, &b}, k.out, c); });
        // The plain GEMM: the same flops on operands already in GEMM order.
        cuda::Buffer cbuf(static_cast<std::size_t>(batch * m * n) * sizeof(T));
        const float one = 1, zero = 0;
        const double t_gemm = best_of(c, [&] {
            cuda::check(cublasGemmStridedBatchedEx(c.blas(), CUBLAS_OP_N, CUBLAS_OP_N, int(n),
                                                   int(m), int(kk), &one, b.ptr(), dt, int(n),
                                                   kk * n, a.ptr(), dt, int(kk), m * kk, &zero,
                                                   cbuf.get(), dt, int(n), m * n, int(batch),
                                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                        "gemm");
        });
        const double flops = 2.0 * double(batch) * double(m) * double(n) * double(kk);
        std::printf("  %-52s %7.1f TF %7.1f TF %7.2f\n", k.what, flops / t_ein / 1e12,
                    flops / t_gemm / 1e12, t_gemm / t_ein);
    }
}

/// "N ranks on 1 GPU", or on several (round-robin, as run_cuda places them): the targets are
/// for one GPU (CUDA_VISIBLE_DEVICES=0 gives one).
std::string gpus_text(const std::string& ranks) {
    const int gpus = probe_gpus().devices;
    return ranks + " on " + std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs, round-robin");
}

void collective_bench() {
    const int n = 8;
    std::printf("virtual-rank collectives, %s, device buffers, vs memcpy D2D on GPU 0\n",
                gpus_text(std::to_string(n) + " ranks").c_str());
    std::printf("  %-28s %10s %12s %12s %7s\n", "collective", "per rank", "collective", "memcpy",
                "ratio");
    for (std::size_t mib : {16, 128}) {
        // Per member block.
        const std::size_t count = mib * (1u << 20) / sizeof(float) / n / (shrink > 1 ? 1024 : 1);
        const std::size_t block = count * sizeof(float);
        // memcpy: the bytes every collective below writes, in one copy per rank block.
        double t_copy = 0;
        {
            cuda::Context c(0);
            cuda::Buffer src(block * n * n), dst(block * n * n);
            t_copy = best_of(c, [&] {
                cuda::check(cudaMemcpyAsync(dst.get(), src.get(), block * n * n,
                                            cudaMemcpyDeviceToDevice, c.stream()),
                            "memcpy");
            });
        }
        const double bytes = double(block) * n * n; // n ranks each write n blocks
        for (const char* what : {"all_gather", "all_to_all", "reduce_scatter", "all_reduce"}) {
            double best = 1e30;
            run_cuda(MeshShape{{n}, {}}, [&](Communicator& comm, int device) {
                cuda::check(cudaSetDevice(device), "device");
                cuda::Buffer send(block * n), recv(block * n);
                cuda::check(cudaMemset(send.get(), 0, block * n), "memset");
                cuda::check(cudaDeviceSynchronize(), "sync");
                Group& g = comm.world();
                auto once = [&] {
                    const std::string w = what;
                    if (w == "all_gather")
                        g.all_gather(send.get(), recv.get(), count, DType::F32);
                    else if (w == "all_to_all")
                        g.all_to_all(send.get(), recv.get(), count, DType::F32);
                    else if (w == "reduce_scatter")
                        g.reduce_scatter(send.get(), recv.get(), count, DType::F32, PartialOp::Sum);
                    else
                        g.all_reduce(recv.get(), count * n, DType::F32, PartialOp::Sum);
                };
                once();
                for (int r = 0; r < repeats; ++r) {
                    g.barrier();
                    const auto t0 = Clock::now();
                    once();
                    g.barrier();
                    const double s = seconds_since(t0);
                    if (comm.rank() == 0) best = std::min(best, s);
                }
            });
            // reduce_scatter reads n blocks and writes one per rank: count its reads as the
            // bytes moved; all_reduce moves them twice (reduce-scatter, then all-gather).
            const double moved = std::string(what) == "all_reduce" ? 2 * bytes : bytes;
            std::printf("  %-28s %7.2f MiB %9.1f GB/s %9.1f GB/s %7.2f\n", what,
                        double(block) * n / (1 << 20), moved / best / 1e9, bytes / t_copy / 1e9,
                        (moved / best) / (bytes / t_copy));
        }
    }
}

void mlp_bench() {
    const std::string sizes = "b=" + std::to_string(ext(2048)) + " d=" + std::to_string(ext(8192)) +
                              " f=" + std::to_string(ext(32768));
    const std::string sharded = "mesh 8\ndim " + sizes + "\n" +
                                "h_{b f_0} = phi(W^0_{d f_0} x_{bd})\n"
                                "z_{bd} = W^1_{f_0 d} h_{b f_0}\n";
    std::printf("TP MLP %s, f32, plan run on cuda (local steps and "
                "collectives on device-resident shards; inputs generated and uploaded before "
                "the clock starts; no reference)\n",
                sizes.c_str());
    double times[2] = {0, 0};
    for (int v = 0; v < 2; ++v) {
        std::string src = sharded;
        if (v == 1) src.replace(0, 6, "mesh 1");
        SourceFile file("mlp.ein", src);
        const auto parsed = parser::parse(file);
        semantics::CheckOptions co;
        co.text = file.text();
        const auto plan = semantics::check(parsed.program, co);
        if (parsed.has_errors() || plan.errors() > 0) {
            std::printf("  the program does not check\n");
            return;
        }
        LabelTable labels;
        labels.add(plan);
        double best = 1e30, load = 0;
        // Run -1 warms up (module loading, cuBLAS's first calls, the memory pool) uncounted.
        for (int r = -1; r < std::max(1, repeats / 2); ++r) {
            double t = 0;
            run_cuda(mesh_shape(plan.mesh), [&](Communicator& comm, int device) {
                auto compute = make_cuda_compute<float>(device);
                RankProgram<float> prog(plan, labels, comm, {DataMode::Random, 0}, compute.get());
                const auto t_load = Clock::now();
                for (std::size_t s = 0; s < plan.statements.size(); ++s)
                    prog.preload(s);
                comm.world().barrier();
                if (comm.rank() == 0) load = seconds_since(t_load);
                const auto t0 = Clock::now();
                for (std::size_t s = 0; s < plan.statements.size(); ++s)
                    prog.run(s);
                // The last GEMM may still be queued (one rank runs no collective to wait on).
                compute->synchronize();
                comm.world().barrier();
                if (comm.rank() == 0) t = seconds_since(t0);
            });
            if (r >= 0) best = std::min(best, t);
        }
        times[v] = best;
        std::printf("  %-40s %8.3f s (inputs: %.2f s on the host, not counted)\n",
                    v == 0 ? gpus_text("8 virtual ranks").c_str() : "unsharded (1 rank)", best,
                    load);
    }
    std::printf("  ratio sharded / unsharded: %.2f\n", times[0] / times[1]);
}

} // namespace

int main(int argc, char** argv) {
    const std::string what = argc > 1 ? argv[1] : "all";
    if (argc > 2) repeats = std::max(1, std::atoi(argv[2]));
    if (argc > 3 && std::string(argv[3]) == "--smoke") shrink = 32;
    const auto probe = probe_gpus();
    if (probe.devices == 0) {
        std::printf("SKIPPED: %s\n", probe.problem.c_str());
        return 77;
    }
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    std::printf("GPU 0: %s, %d GPU(s)\n", prop.name, probe.devices);
    try {
        if (what == "einsum" || what == "all") {
            einsum_bench<float>("f32", CUDA_R_32F);
            einsum_bench<__nv_bfloat16>("bf16", CUDA_R_16BF);
        }
        if (what == "collectives" || what == "all") collective_bench();
        if (what == "mlp" || what == "all") mlp_bench();
    } catch (const std::exception& e) {
        std::printf("error: %s\n", e.what());
        return 2;
    }
    return 0;
}
