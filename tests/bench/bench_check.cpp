// Benchmark (not a test): check throughput, and the re-check time of a small program (what
// the REPL and GUI pay on every keystroke).
//   bench_check [STATEMENTS] [REPEATS]
#include "app/allocator.hpp"
#include "bench_util.hpp"
#include "parser/parser.hpp"
#include "semantics/checker.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

/// `n` typical statements over a 2-D mesh: TP matmuls, reductions, chains, elementwise. An
/// input is read with one shape (S106): x is not the dot product's operand too (u, v, h).
std::string generate(int n) {
    static const char* kinds[] = {
        "z{i}_{bsd} = W^1_{d r_0 f} phi(W^0_{r_0 f d'} x_{bsd'})",
        "y{i}_{b s r_0 f} = W^0_{r_0 f d'} x_{b_1 s d'}",
        "c{i} = u_{r_0 e} v_{r_0 e}",
        "q{i}_{r_0 c} = W_{r c r'_0 f} h_{r'_0 f}",
        "m{i}_{i_0 j} = a_{i_0 j} + b_{i_0 j}",
    };
    std::string out = "mesh 4x2\ndim b=8 s=256 d=1024 f=1024 c=256 e=64 i=16 j=16\n";
    for (int k = 0; k < n; ++k) {
        std::string s = kinds[k % 5];
        const auto pos = s.find("{i}");
        s.replace(pos, 3, std::to_string(k));
        out += s + "\n";
    }
    return out;
}

} // namespace

int main(int argc, char** argv) {
    int n = 0, repeats = 0;
    if (!shardscope::bench::parse_args(argc, argv, "bench_check", n, repeats)) return 2;
    using shardscope::bench::seconds_since;
    const shardscope::SourceFile big("bench.ein", generate(n));
    const auto parsed = shardscope::parser::parse(big);
    if (parsed.has_errors()) {
        std::fprintf(stderr, "bench program has parse errors\n");
        return 1;
    }
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto plan = shardscope::semantics::check(parsed.program);
        best = std::min(best, seconds_since(t0));
        if (plan.errors() > 0) {
            std::fprintf(stderr, "bench program has check errors\n");
            return 1;
        }
    }
    std::printf("check                 %.0f statements/s (%d statements, %.3f s; %s)\n", n / best,
                n, best, shardscope::app::allocator_name().c_str());

    // Re-check of a 50-statement program, parse included, as on every keystroke: from scratch,
    // and with the cache the REPL and GUI keep (one statement edited between checks).
    const std::string small_text = generate(50);
    const shardscope::SourceFile small("small.ein", small_text);
    const int loops = 200;
    double total = 0, worst = 0;
    for (int r = 0; r < loops; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto p = shardscope::parser::parse(small);
        const auto plan = shardscope::semantics::check(p.program);
        const double t = seconds_since(t0);
        total += t;
        worst = std::max(worst, t);
        if (plan.statements.size() != 50) return 1;
    }
    std::printf("re-check 50 stmts     %.3f ms mean, %.3f ms worst (parse + check, %d runs)\n",
                total / loops * 1e3, worst * 1e3, loops);

    shardscope::semantics::CheckCache cache;
    const auto edit_at = small_text.find("c22 =");
    total = 0, worst = 0;
    std::size_t hits = 0;
    for (int r = 0; r <= loops; ++r) {
        // Types a character into one statement's name and takes it out again.
        std::string text = small_text;
        if (r % 2) text.insert(edit_at + 1, "x");
        const shardscope::SourceFile edited("small.ein", text);
        const auto t0 = std::chrono::steady_clock::now();
        const auto p = shardscope::parser::parse(edited);
        shardscope::semantics::CheckOptions options;
        options.text = edited.text();
        const auto plan = shardscope::semantics::check(p.program, options, cache);
        const double t = seconds_since(t0);
        if (plan.statements.size() != 50) return 1;
        if (r == 0) continue; // the first check fills the cache
        total += t;
        worst = std::max(worst, t);
        hits += cache.hits();
    }
    std::printf("re-check 50, cached   %.3f ms mean, %.3f ms worst (one statement edited, "
                "%.0f of 50 reused)\n",
                total / loops * 1e3, worst * 1e3, static_cast<double>(hits) / loops);

    // One product of many factors: the planner's greedy pair order (once O(n^4): 7 s at 400).
    std::string product = "mesh 4\ndim e=8\nz =";
    for (int k = 0; k < 400; ++k)
        product += " a" + std::to_string(k) + "_{e}";
    const shardscope::SourceFile long_product("product.ein", product + "\n");
    const auto lp = shardscope::parser::parse(long_product);
    best = 1e30;
    for (int r = 0; r < 3; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto plan = shardscope::semantics::check(lp.program);
        best = std::min(best, seconds_since(t0));
        if (plan.errors() > 0) return 1;
    }
    std::printf("product of 400        %.3f s (one statement of 400 factors)\n", best);
    return 0;
}
