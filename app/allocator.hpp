// The allocator the binary runs on: mimalloc where the build links it (SHARDSCOPE_MIMALLOC),
// else glibc's malloc. Named in `--version` and by the benchmarks, so figures say what ran.
#pragma once

#include <string>

namespace shardscope::app {

/// "mimalloc 2.0.9" when mimalloc serves this process's malloc, else "glibc malloc".
std::string allocator_name();

/// Makes running out of memory a message and exit code 2, never a silent abort: a terminate
/// handler that reports a std::bad_alloc nothing caught (static initializers, threads, noexcept
/// code) and exits, leaving every other exception to the previous handler. Called before any
/// other static initializer of the executable (main.cpp). With mimalloc, allocator.cpp also
/// replaces operator new, whose mimalloc version aborts instead of throwing std::bad_alloc.
void install_out_of_memory_handling();

} // namespace shardscope::app
