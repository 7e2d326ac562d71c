// The executor on the tensor-parallel MLP (b=8 s=256 d=1024 f=4096, f32, 8 ranks on sim):
//  1. each local einsum of the plan against OpenBLAS's sgemm on the same shapes (one thread,
//     interleaved, best of N) — target ratio >= 0.7;
//  2. the sim all-reduce and all-gather bandwidth against memcpy, 8 rank threads either way;
//  3. the whole `exec` run: plan, reference, 8 ranks, verification.
// Usage: bench_exec [REPEATS]
#include "bench_util.hpp"

#include "exec/comm.hpp"
#include "exec/kernels.hpp"
#include "exec/layout.hpp"
#include "exec/run.hpp"
#include "parser/parser.hpp"
#include "semantics/checker.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

using namespace shardscope;
using bench::seconds_since;
using Clock = std::chrono::steady_clock;

static const char* kProgram = R"(mesh 8
dim b=8 s=256 d=1024 f=4096
h_{bs f_0} = W^0_{d f_0} x_{bsd}
z_{bsd} = W^1_{f_0 d} h_{bs f_0}
)";

int main(int argc, char** argv) {
    const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
    SourceFile src("tp_mlp.ein", kProgram);
    auto parsed = parser::parse(src);
    semantics::CheckOptions co;
    co.small_defaults = true;
    const auto plan = semantics::check(parsed.program, co);
    if (plan.errors() > 0) {
        std::fprintf(stderr, "the benchmark program does not check\n");
        return 1;
    }
    exec::set_blas_threads(1);
    const auto mesh = exec::mesh_shape(plan.mesh);
    const auto coords = mesh.coords(0);
    exec::LabelTable labels;
    labels.add(plan);

    // 1. Local einsums of the plan (rank 0's shapes) against sgemm with the same m, n, k.
    std::printf("TP MLP b=8 s=256 d=1024 f=4096, f32, 8 ranks; best of %d, OpenBLAS 1 thread\n",
                repeats);
    std::printf("%-34s %16s %12s %12s %7s\n", "local einsum (rank 0)", "m x n x k", "einsum",
                "sgemm", "ratio");
    for (const auto& sp : plan.statements)
        for (const auto& st : sp.steps) {
            if (st.op != semantics::OpKind::Einsum || st.inputs.size() != 2) continue;
            std::vector<exec::Tensor<float>> ins;
            for (int id : st.inputs) {
                const auto& l = sp.values[static_cast<std::size_t>(id)].layout;
                auto t = exec::Tensor<float>::zeros(exec::local_shape(l, mesh, coords),
                                                    labels.labels_at(l));
                for (std::size_t e = 0; e < t.data.size(); ++e)
                    t.data[e] = static_cast<float>((e * 7919) % 1000) * 1e-3f;
                ins.push_back(std::move(t));
            }
            const auto& out_layout = sp.values[static_cast<std::size_t>(st.output)].layout;
            const auto out = labels.labels_at(out_layout);
            // m, n, k: free extents of each operand and the contracted extent.
            double m = 1, n = 1, k = 1;
            for (std::size_t d = 0; d < ins[0].labels.size(); ++d) {
                const int l = ins[0].labels[d];
                const bool kept = std::count(out.begin(), out.end(), l) > 0;
                (kept ? m : k) *= static_cast<double>(ins[0].shape[d]);
            }
            for (std::size_t d = 0; d < ins[1].labels.size(); ++d)
                if (ins[0].dim_of(ins[1].labels[d]) < 0) n *= static_cast<double>(ins[1].shape[d]);
            const auto M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k);
            std::vector<float> a(static_cast<std::size_t>(M) * K, 0.5f),
                b(static_cast<std::size_t>(K) * N, 0.25f), c(static_cast<std::size_t>(M) * N);
            double best_e = 1e30, best_g = 1e30;
            for (int r = 0; r < repeats; ++r) {
                auto t0 = Clock::now();
                auto z = exec::einsum<float>({&ins[0], &ins[1]}, out);
                best_e = std::min(best_e, seconds_since(t0));
                t0 = Clock::now();
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a.data(), K,
                            b.data(), N, 0.0f, c.data(), N);
                best_g = std::min(best_g, seconds_since(t0));
            }
            const double flop = 2 * m * n * k;
            char shape[64];
            std::snprintf(shape, sizeof shape, "%dx%dx%d", M, N, K);
            std::printf("%-34s %16s %7.1f GF/s %7.1f GF/s %7.2f\n", st.text.detail.c_str(), shape,
                        flop / best_e * 1e-9, flop / best_g * 1e-9, best_g / best_e);
        }

    // 2. Collectives on the sim backend against memcpy, 8 threads each, 8 MiB per rank.
    const std::size_t count = 2u << 20; // floats
    const double bytes = static_cast<double>(count) * 4;
    auto time_ranks = [&](auto&& body) {
        double best = 1e30;
        for (int r = 0; r < repeats; ++r) {
            std::vector<double> took(8);
            exec::run_sim(mesh, [&](exec::Communicator& comm) {
                std::vector<float> buf(count, 1.0f), out(count * 8, 0.0f);
                body(comm, buf, out); // warm: first touch of every page, scratch buffers
                comm.world().barrier();
                auto t0 = Clock::now();
                body(comm, buf, out);
                comm.world().barrier();
                took[static_cast<std::size_t>(comm.rank())] = seconds_since(t0);
            });
            best = std::min(best, *std::max_element(took.begin(), took.end()));
        }
        return best;
    };
    const double t_ar = time_ranks([&](exec::Communicator& c, std::vector<float>& buf, auto&) {
        c.axis(0).all_reduce(buf.data(), count, exec::DType::F32, exec::PartialOp::Sum);
    });
    const double t_ag =
        time_ranks([&](exec::Communicator& c, std::vector<float>& buf, std::vector<float>& out) {
            c.axis(0).all_gather(buf.data(), out.data(), count / 8, exec::DType::F32);
        });
    double t_mc = 1e30;
    for (int r = 0; r < repeats; ++r) {
        std::vector<std::vector<float>> src(8, std::vector<float>(count, 1.0f)),
            dst(8, std::vector<float>(count));
        std::vector<std::thread> threads;
        auto t0 = Clock::now();
        for (auto& d : dst)
            std::fill(d.begin(), d.end(), 0.0f); // first touch outside the timing
        t0 = Clock::now();
        for (int i = 0; i < 8; ++i)
            threads.emplace_back([&, i] {
                std::memcpy(dst[static_cast<std::size_t>(i)].data(),
                            src[static_cast<std::size_t>(i)].data(), count * 4);
            });
        for (auto& t : threads)
            t.join();
        t_mc = std::min(t_mc, seconds_since(t0));
    }
    std::printf("\nsim collectives, 8 ranks, 8 MiB per rank (bandwidth = bytes per rank / time)\n");
    std::printf("  memcpy (8 threads)     %7.2f GB/s\n", bytes / t_mc * 1e-9);
    std::printf("  all-reduce             %7.2f GB/s   ratio to memcpy %.2f\n", bytes / t_ar * 1e-9,
                t_mc / t_ar);
    std::printf("  all-gather (1/8 each)  %7.2f GB/s   ratio to memcpy %.2f\n", bytes / t_ag * 1e-9,
                t_mc / t_ag);

    // 3. The whole run.
    exec::ExecOptions eo;
    auto t0 = Clock::now();
    const auto report = exec::execute(parsed.program, plan, eo);
    const double whole = seconds_since(t0);
    std::printf("\nexec (plan, reference in f64, 8 ranks, verification): %.2f s, %s\n", whole,
                report.passed() ? "all PASS" : "FAIL");
    return report.passed() ? 0 : 1;
}
