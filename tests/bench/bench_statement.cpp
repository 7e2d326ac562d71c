// Benchmark (not a test): parse + check of issue 20's statement, the Megatron MLP on a 2-D
// named mesh, repeated with other result names. tests/bench/callgrind.sh build statement
// gives the instructions per statement (parse, check and freeing the plan).
//   bench_statement [STATEMENTS] [REPEATS] [distinct]
// `distinct`: every statement reads its own tensors (W^1_k, W^0_k, x_k), as a program's layers
// written out do; without it every statement reads the same three, which the checker builds
// once per program (an occurrence and an input layout per distinct text).
#include "app/allocator.hpp"
#include "bench_util.hpp"
#include "parser/parser.hpp"
#include "semantics/checker.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
    int n = 0, repeats = 0;
    if (!shardscope::bench::parse_args(argc, argv, "bench_statement", n, repeats)) return 2;
    std::string text = "mesh dp=4 tp=8\ndim b=8 s=256 d=1024 f=1024 e=1024 r=8\n";
    const bool distinct = argc > 3 && std::string(argv[3]) == "distinct";
    for (int k = 0; k < n; ++k) {
        const std::string id = std::to_string(k), own = distinct ? id : std::string();
        text += "z" + id + "_{b_{dp} s d} = W" + own + "^1_{d r_{tp} f} phi(W" + own +
                "^0_{r_{tp} f e} x" + own + "_{b_{dp} s e})\n";
    }
    const shardscope::SourceFile file("bench.ein", text);
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto parsed = shardscope::parser::parse(file);
        shardscope::semantics::CheckOptions options;
        options.text = file.text(); // as check, the REPL and the GUI: sources as written
        const auto plan = shardscope::semantics::check(parsed.program, options);
        best = std::min(best, shardscope::bench::seconds_since(t0));
        if (parsed.has_errors() || plan.errors() > 0 ||
            plan.statements.size() != static_cast<std::size_t>(n)) {
            std::fprintf(stderr, "bench program has errors\n");
            return 1;
        }
    }
    std::printf("parse + check         %.0f statements/s (%d statements, %.3f s; %s)\n", n / best,
                n, best, shardscope::app::allocator_name().c_str());
    return 0;
}
