// shardscope-gui: the window and PNG output (gui_helper.hpp), started by the shardscope
// binary with its own arguments for `gui` and `render ... -o x.png`. It links OpenGL, GLFW,
// X11 and ImGui, which the main binary does not.
#include "allocator.hpp"
#include "commands.hpp"
#include "inputs.hpp"

#include <exception>
#include <iostream>
#include <new>

namespace {

struct OutOfMemoryHandling {
    OutOfMemoryHandling() { shardscope::app::install_out_of_memory_handling(); }
};
__attribute__((init_priority(101))) const OutOfMemoryHandling out_of_memory_handling;

} // namespace

int main(int argc, char** argv) {
    using namespace shardscope::app;
    CLI::App app{"shardscope-gui: the window and PNG pictures of shardscope (run through "
                 "'shardscope gui' and 'shardscope render')"};
    app.require_subcommand(1);
    int exit_code = kExitOk;
    add_render_command(app, exit_code);
    add_gui_command(app, exit_code);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? kExitOk : kExitUsage;
    } catch (const std::bad_alloc&) {
        std::cerr << "shardscope: error: out of memory (an allocation failed; under a memory "
                     "limit such as ulimit -v, raise it, or give smaller input)\n";
        return kExitUsage;
    } catch (const std::exception& e) {
        std::cerr << "shardscope: error: " << e.what() << "\n";
        return kExitUsage;
    }
    return exit_code;
}
