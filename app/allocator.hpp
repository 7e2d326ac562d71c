// The allocator the binary runs on: mimalloc where the build links it (SHARDSCOPE_MIMALLOC),
// else glibc's malloc. Named in `--version` and by the benchmarks, so figures say what ran.
#pragma once

#include <string>

namespace shardscope::app {

/// "mimalloc 2.0.9" when mimalloc serves this process's malloc, else "glibc malloc".
std::string allocator_name();

} // namespace shardscope::app
