// shardscope-gui: the window and PNG output (gui_helper.hpp), started by the shardscope
// binary with its own arguments for `gui` and `render ... -o x.png`. It links OpenGL, GLFW,
// X11 and ImGui, which the main binary does not.
#include "cli_main.hpp"
#include "commands.hpp"
#include "inputs.hpp"

int main(int argc, char** argv) {
    using namespace shardscope::app;
    CLI::App app{"shardscope-gui: the window and PNG pictures of shardscope (run through "
                 "'shardscope gui' and 'shardscope render')"};
    app.require_subcommand(1);
    int exit_code = kExitOk;
    add_render_command(app, exit_code);
    add_gui_command(app, exit_code);
    return run_command_line(app, argc, argv, exit_code);
}
