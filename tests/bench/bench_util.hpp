// What the benchmarks share: timing and the `[STATEMENTS] [REPEATS]` command line.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace shardscope::bench {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Reads `NAME [STATEMENTS] [REPEATS]`; false (after a usage line) when they are not positive.
inline bool parse_args(int argc, char** argv, const char* name, int& statements, int& repeats) {
    statements = argc > 1 ? std::atoi(argv[1]) : 100000;
    repeats = argc > 2 ? std::atoi(argv[2]) : 3;
    if (statements > 0 && repeats > 0) return true;
    std::fprintf(stderr, "usage: %s [STATEMENTS>0] [REPEATS>0]\n", name);
    return false;
}

} // namespace shardscope::bench
