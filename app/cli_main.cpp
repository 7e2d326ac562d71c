#include "cli_main.hpp"

#include "allocator.hpp"
#include "inputs.hpp"

#include <exception>
#include <iostream>
#include <new>

namespace {

// Before every other static initializer of either executable (CLI11's validators allocate): a
// failed allocation is a message and exit 2 from the start (allocator.hpp).
struct OutOfMemoryHandling {
    OutOfMemoryHandling() { shardscope::app::install_out_of_memory_handling(); }
};
__attribute__((init_priority(101))) const OutOfMemoryHandling out_of_memory_handling;

} // namespace

namespace shardscope::app {

int run_command_line(CLI::App& app, int argc, char** argv, const int& exit_code) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? kExitOk : kExitUsage;
    } catch (const std::bad_alloc&) {
        // A memory limit (ulimit -v, a cgroup) or an input too large for memory: say so rather
        // than abort. Nothing is allocated here (a literal to an unbuffered stream).
        std::cerr << "shardscope: error: out of memory (an allocation failed; under a memory "
                     "limit such as ulimit -v, raise it, or give smaller input)\n";
        return kExitUsage;
    } catch (const std::exception& e) {
        std::cerr << "shardscope: error: " << e.what() << "\n";
        return kExitUsage;
    }
    return exit_code;
}

} // namespace shardscope::app
