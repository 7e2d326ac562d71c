// Benchmark (not a test): parse + canonical print throughput on a generated program.
//   bench_parse [STATEMENTS] [REPEATS]
// Prints statements/s for parse alone and parse + print, best of REPEATS runs.
#include "bench_util.hpp"
#include "parser/parser.hpp"
#include "parser/printer.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

/// A program of `n` statements in the mix people write: einsums, calls, chains, declarations.
std::string generate(int n) {
    static const char* kinds[] = {
        "z_{bsd} = W^1_{d r_0 f} phi(W^0_{r_0 f d'} x_{bsd'})",
        "z = x_{r_0 e} y_{r_0 e}  # dot product",
        "z_{r_0 c} = W_{r c r'_0 f} x_{r'_0 f}",
        "x_{i_0 j} -> x_{i j_0}",
        "C[I, K]{U_X} = A[I, J_X] B[J_X, K]",
        "p_{sv} = softmax_v(q_{sd} k_{vd}) / 2",
        "expect all-reduce(0)",
        "y_{b r_0 t d} = x_{b r_0 t d} + relu(h_{b r_0 t d})",
        "dim b=8 s=2048 d=4096",
        "z_{ r _{0}c } = W_{ r c r _{0}' f } x_{ r _{0}'f } \\quad \\textrm{(reduce-scatter)} \\ .",
    };
    std::string out = "mesh 4\n";
    for (int i = 0; i < n; ++i) {
        out += kinds[i % 10];
        out += '\n';
    }
    return out;
}

} // namespace

int main(int argc, char** argv) {
    int n = 0, repeats = 0;
    if (!shardscope::bench::parse_args(argc, argv, "bench_parse", n, repeats)) return 2;
    using shardscope::bench::seconds_since;
    const shardscope::SourceFile file("bench.ein", generate(n));
    double best_parse = 1e30, best_total = 1e30;
    std::size_t printed_bytes = 0;
    for (int r = 0; r < repeats; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        const auto result = shardscope::parser::parse(file);
        const double parse_s = seconds_since(t0);
        const auto printed = shardscope::parser::print(result.program);
        const double total_s = seconds_since(t0);
        if (result.has_errors()) {
            std::fprintf(stderr, "bench program has errors\n");
            return 1;
        }
        printed_bytes = printed.size();
        best_parse = std::min(best_parse, parse_s);
        best_total = std::min(best_total, total_s);
    }
    std::printf("statements            %d (+1 mesh line), %zu bytes in, %zu bytes printed\n", n,
                file.text().size(), printed_bytes);
    std::printf("parse                 %.0f statements/s (%.3f s)\n", n / best_parse, best_parse);
    std::printf("parse + print         %.0f statements/s (%.3f s)\n", n / best_total, best_total);
    return 0;
}
