// Differential testing: every random program `check` accepts must PASS `exec` on sim (f64
// random data, and integer data where the program is linear). A failure is minimised and
// printed; keep it in tests/diff/regressions/ (see the README there).
//
// Environment: SHARDSCOPE_DIFF_SEED (default 22), SHARDSCOPE_DIFF_PROGRAMS (default 600),
// SHARDSCOPE_DIFF_SECONDS (a time bound, default none), SHARDSCOPE_DIFF_OUT (a folder where
// each minimised failure is written as a .ein file), SHARDSCOPE_DIFF_MISMATCH_OUT (a folder for
// programs whose collectives as exec ran them differ from the plan's, minimised).
// A run whose collectives differ from the plan's fails (exec itself refuses one since
// issue 21; this is the oracle's own check of what exec reports).
#include "tests/diff/program.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using namespace shardscope;
using diff::Outcome;

namespace {

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

std::string read(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace

TEST_CASE("diff: random programs that check accepts PASS exec (seeded, bounded)") {
    const auto seed = env_number("SHARDSCOPE_DIFF_SEED", 22);
    const auto programs = env_number("SHARDSCOPE_DIFF_PROGRAMS", 600);
    const auto seconds = env_number("SHARDSCOPE_DIFF_SECONDS", 0);
    const char* out_dir = std::getenv("SHARDSCOPE_DIFF_OUT");
    const char* mismatch_dir = std::getenv("SHARDSCOPE_DIFF_MISMATCH_OUT");
    const bool plan_exact = env_number("SHARDSCOPE_DIFF_PLAN_EXACT", 1) != 0;
    const auto start = std::chrono::steady_clock::now();
    std::mt19937_64 rng(seed);
    std::uint64_t generated = 0, accepted = 0, linear = 0, failures = 0, mismatches = 0;
    for (; generated < programs; ++generated) {
        if (seconds && std::chrono::steady_clock::now() - start > std::chrono::seconds(seconds))
            break;
        const auto p = diff::generate(rng);
        const auto src = diff::print(p);
        const bool ints = diff::is_linear(p);
        const auto o = diff::run(src, ints, generated);
        if (o.kind == Outcome::Kind::Rejected) continue;
        ++accepted;
        linear += ints;
        if (!o.mismatch.empty()) {
            ++mismatches;
            // The printed plan must be the plan run (issue 21).
            if (plan_exact)
                FAIL_CHECK("program " << generated << " (seed " << seed
                                      << "): exec ran other collectives than planned\n"
                                      << src << o.mismatch);
            if (mismatch_dir) {
                // What the plan prints is not what exec ran: minimised for the planner.
                // The kinds planned and run, without axes: the minimiser may shrink the mesh.
                const auto what = [](const std::string& m) {
                    std::string out;
                    int depth = 0;
                    for (char ch : m.substr(m.find(": planned")))
                        if (ch == '(')
                            ++depth;
                        else if (ch == ')')
                            --depth;
                        else if (depth == 0)
                            out += ch;
                    return out;
                };
                const auto want = what(o.mismatch);
                const auto small = diff::minimise(p, [&](const std::string& text) {
                    const auto again = diff::run(text, false);
                    return !again.mismatch.empty() && what(again.mismatch) == want;
                });
                std::ofstream f(std::filesystem::path(mismatch_dir) /
                                ("mismatch_" + std::to_string(seed) + "_" +
                                 std::to_string(generated) + ".ein"));
                f << "# " << diff::run(diff::print(small), false).mismatch << "\n"
                  << diff::print(small);
            }
        }
        if (!o.failed()) continue;
        ++failures;
        const auto small = diff::print(diff::minimise(p, ints, o));
        const auto again = diff::run(small, ints, generated);
        if (out_dir) {
            std::ofstream f(std::filesystem::path(out_dir) / ("diff_" + std::to_string(seed) + "_" +
                                                              std::to_string(generated) + ".ein"));
            f << "# " << diff::outcome_name(o.kind) << (ints ? " (ints)" : "") << "\n" << small;
        }
        FAIL_CHECK("program " << generated << " (seed " << seed
                              << "): " << diff::outcome_name(o.kind) << "\n"
                              << src << o.detail << "minimised (" << diff::outcome_name(again.kind)
                              << "):\n"
                              << small << again.detail);
    }
    MESSAGE("diff: " << generated << " programs generated, " << accepted
                     << " accepted by check and run (" << linear << " also with integer data), "
                     << failures << " failures; " << mismatches
                     << " ran other collectives than planned");
    // The generator must mostly produce programs the checker accepts, or it tests nothing.
    CHECK(accepted * 2 >= generated);
}

TEST_CASE("diff: the kept regressions check and PASS exec, or are refused by check") {
    // Each file: '# expect: pass' (the checker accepts it and exec PASSes) or '# expect:
    // rejected' (the checker refuses it with an error); '# data: ints' runs integer data too.
    const std::filesystem::path dir = SHARDSCOPE_DIFF_REGRESSIONS_DIR;
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (e.path().extension() != ".ein") continue;
        const auto src = read(e.path());
        CAPTURE(e.path().filename().string());
        const bool rejected = src.find("# expect: rejected") != std::string::npos;
        const bool pass = src.find("# expect: pass") != std::string::npos;
        REQUIRE_MESSAGE(rejected != pass, "say '# expect: pass' or '# expect: rejected'");
        const auto o = diff::run(src, src.find("# data: ints") != std::string::npos);
        if (rejected)
            CHECK_MESSAGE(o.kind == Outcome::Kind::Rejected, diff::outcome_name(o.kind) << "\n"
                                                                                        << src);
        else
            CHECK_MESSAGE(o.kind == Outcome::Kind::Pass, diff::outcome_name(o.kind)
                                                             << "\n"
                                                             << src << o.detail);
        ++files;
    }
    CHECK(files >= 6);
}

TEST_CASE("diff: the generator reaches every construct of NOTATION.md") {
    std::mt19937_64 rng(7);
    std::map<std::string, int> seen;
    const char* constructs[] = {
        "mesh dp=", "x2",     "x2x",   "devices [", " -> ",       ":=",         "+=",
        "softmax_", "max_",   "mean_", "sum_",      "AllReduce_", "AllGather_", "ReduceScatter_",
        "{U_",      " / ",    " - ",   "-",         "split s",    "(r",         "neg(",
        "scale(",   "swish(", "lin(",  "exp(",      "_{01}",      "_{dp,tp}",   "0.5 ",
        "3 "};
    int linear = 0;
    for (int n = 0; n < 400; ++n) {
        const auto p = diff::generate(rng);
        const auto src = diff::print(p);
        for (const char* c : constructs)
            seen[c] += src.find(c) != std::string::npos;
        linear += diff::is_linear(p);
        CHECK(!p.stmts.empty());
    }
    for (const char* c : constructs)
        CHECK_MESSAGE(seen[c] > 0, c);
    CHECK(linear > 20);
    CHECK(linear < 380);
}

TEST_CASE("diff: the minimiser shrinks a program to what still fails") {
    std::mt19937_64 rng(3);
    // A 'failure' that needs one softmax along a sharded index: the minimiser must keep it
    // and drop nearly everything else.
    auto fails = [](const std::string& src) {
        return src.find("softmax_") != std::string::npos &&
               diff::run(src, false).kind == Outcome::Kind::Pass;
    };
    int shrunk = 0;
    for (int n = 0; n < 200 && shrunk < 3; ++n) {
        auto p = diff::generate(rng);
        const auto src = diff::print(p);
        if (p.stmts.size() < 3 || !fails(src)) continue;
        const auto small = diff::minimise(p, fails);
        const auto text = diff::print(small);
        CAPTURE(src);
        CAPTURE(text);
        CHECK(fails(text));
        CHECK(small.stmts.size() == 1);
        CHECK(small.devices.empty());
        CHECK(text.size() < src.size());
        ++shrunk;
    }
    CHECK(shrunk == 3);
}

TEST_CASE("diff: the oracle sees a wrong plan and a refused program") {
    const std::string src = "mesh 2\ndim i=4 k=4\nz_{i} = x_{i k_0} y_{k_0}\n";
    CHECK(diff::run(src, true).kind == Outcome::Kind::Pass);
    // Without its all-reduce (the einsum's output read in its place, as R), the plan FAILs.
    const auto broken = diff::run(src, true, 1, [](semantics::Plan& plan) {
        auto& sp = plan.statements.at(0);
        auto it = std::find_if(sp.steps.begin(), sp.steps.end(), [](const auto& st) {
            return st.kind == semantics::StepKind::AllReduce;
        });
        REQUIRE(it != sp.steps.end());
        const int in = it->inputs.at(0), out = it->output;
        sp.values.at(static_cast<std::size_t>(in)).layout.placements =
            sp.values.at(static_cast<std::size_t>(out)).layout.placements;
        sp.steps.erase(it);
        if (sp.result_value == out) sp.result_value = in;
    });
    CHECK(broken.kind == Outcome::Kind::Fail);
    CHECK(broken.failed());
    CHECK_MESSAGE(broken.detail.find("z_{i} = x_{i k_0} y_{k_0}") != std::string::npos,
                  broken.detail);
    CHECK(diff::run("mesh 2\ndim i=4\nz_{i} = q(x_{i_0})\n", false).kind ==
          Outcome::Kind::Rejected);
}
