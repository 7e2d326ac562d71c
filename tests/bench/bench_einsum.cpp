// Benchmark (not a test): einsum against raw cblas_sgemm on the per-rank local products of a
// tensor-parallel MLP (b=8 s=256 d=1024 f=4096, f32, 8 ranks, so f/8 = 512 per rank), OpenBLAS
// on 1 thread as the sim backend runs it. Both are timed interleaved in one run, best of N.
//   bench_einsum [--reps N]
#include "bench_util.hpp"
#include "exec/kernels.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using shardscope::exec::Tensor;
using Dims = std::vector<std::int64_t>;

enum : int { b_ = 0, s_ = 1, d_ = 2, f_ = 3 };

constexpr std::int64_t kB = 8, kS = 256, kD = 1024, kF = 4096 / 8;

Tensor<float> random_tensor(Dims shape, std::vector<int> labels, std::mt19937& rng) {
    auto t = Tensor<float>::zeros(std::move(shape), std::move(labels));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& v : t.data)
        v = u(rng);
    return t;
}

/// One row of the table: an einsum and the sgemm on plain matrices it is compared with.
struct Case {
    std::string name;
    const Tensor<float>* a;
    const Tensor<float>* b;
    std::vector<int> out;
    // The reference GEMM: C (m×n) = op(A) (m×k) · op(B) (k×n), row-major.
    CBLAS_TRANSPOSE ta, tb;
    int m, n, k;
    const float* ga;
    const float* gb;
    double best_einsum = 1e30, best_sgemm = 1e30;
    double max_diff = 0;
};

} // namespace

int main(int argc, char** argv) {
    int reps = 10;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = std::atoi(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: bench_einsum [--reps N]\n");
            return 2;
        }
    }
    if (reps <= 0) {
        std::fprintf(stderr, "usage: bench_einsum [--reps N>0]\n");
        return 2;
    }
    using shardscope::bench::seconds_since;
    namespace ex = shardscope::exec;
    ex::set_blas_threads(1);

    std::mt19937 rng(1);
    const auto x = random_tensor({kB, kS, kD}, {b_, s_, d_}, rng);
    const auto w0 = random_tensor({kD, kF}, {d_, f_}, rng);
    const auto h = random_tensor({kB, kS, kF}, {b_, s_, f_}, rng);
    const auto w1 = random_tensor({kF, kD}, {f_, d_}, rng);
    const auto w0t = ex::permute(w0, {f_, d_});   // W0 stored as [f,d]: CblasTrans, no copy
    const auto xt = ex::permute(x, {b_, d_, s_}); // x stored as [b,d,s]: needs a permute
    const int BS = static_cast<int>(kB * kS), D = static_cast<int>(kD), F = static_cast<int>(kF);

    std::vector<Case> cases = {
        {"x[bsd] W0[df] -> h[bsf]",
         &x,
         &w0,
         {b_, s_, f_},
         CblasNoTrans,
         CblasNoTrans,
         BS,
         F,
         D,
         x.data.data(),
         w0.data.data()},
        {"h[bsf] W1[fd] -> z[bsd]",
         &h,
         &w1,
         {b_, s_, d_},
         CblasNoTrans,
         CblasNoTrans,
         BS,
         D,
         F,
         h.data.data(),
         w1.data.data()},
        {"x[bsd] W0[fd] -> h[bsf]  (W0 transposed)",
         &x,
         &w0t,
         {b_, s_, f_},
         CblasNoTrans,
         CblasTrans,
         BS,
         F,
         D,
         x.data.data(),
         w0t.data.data()},
        {"x[bds] W0[df] -> h[bsf]  (x permuted)",
         &xt,
         &w0,
         {b_, s_, f_},
         CblasNoTrans,
         CblasNoTrans,
         BS,
         F,
         D,
         x.data.data(),
         w0.data.data()},
    };

    std::vector<float> c;
    for (int r = 0; r < reps; ++r)
        for (auto& cs : cases) {
            auto t0 = std::chrono::steady_clock::now();
            const auto e = ex::einsum<float>({cs.a, cs.b}, cs.out);
            cs.best_einsum = std::min(cs.best_einsum, seconds_since(t0));

            c.assign(static_cast<std::size_t>(cs.m) * static_cast<std::size_t>(cs.n), 0.0f);
            t0 = std::chrono::steady_clock::now();
            cblas_sgemm(CblasRowMajor, cs.ta, cs.tb, cs.m, cs.n, cs.k, 1.0f, cs.ga,
                        cs.ta == CblasNoTrans ? cs.k : cs.m, cs.gb,
                        cs.tb == CblasNoTrans ? cs.n : cs.k, 0.0f, c.data(), cs.n);
            cs.best_sgemm = std::min(cs.best_sgemm, seconds_since(t0));
            if (r == 0) { // the einsum computes what the sgemm computes
                for (std::size_t i = 0; i < c.size(); ++i)
                    cs.max_diff = std::max(cs.max_diff, std::fabs(double(c[i]) - e.data[i]));
            }
        }

    std::printf("tensor-parallel MLP b=%lld s=%lld d=%lld f=%lld on 8 ranks, per-rank f=%lld, "
                "f32, OpenBLAS 1 thread, best of %d\n",
                static_cast<long long>(kB), static_cast<long long>(kS), static_cast<long long>(kD),
                static_cast<long long>(kF * 8), static_cast<long long>(kF), reps);
    std::printf("%-42s %16s %11s %11s %7s %9s\n", "einsum", "m x n x k", "einsum", "sgemm", "ratio",
                "max|diff|");
    bool ok = true;
    for (const auto& cs : cases) {
        const double flop = 2.0 * cs.m * cs.n * cs.k;
        const std::string mnk =
            std::to_string(cs.m) + "x" + std::to_string(cs.n) + "x" + std::to_string(cs.k);
        std::printf("%-42s %16s %6.1f GF/s %6.1f GF/s %7.2f %9.1e\n", cs.name.c_str(), mnk.c_str(),
                    flop / cs.best_einsum * 1e-9, flop / cs.best_sgemm * 1e-9,
                    cs.best_sgemm / cs.best_einsum, cs.max_diff);
        ok = ok && cs.max_diff < 1e-2;
    }
    std::printf("ratio = einsum GFLOP/s / sgemm GFLOP/s (target >= 0.7; ~1.0 when no copy is "
                "needed); einsum times include allocating its result\n");
    if (!ok) {
        std::fprintf(stderr, "einsum and sgemm disagree\n");
        return 1;
    }
    return 0;
}
