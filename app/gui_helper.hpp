// The window and PNG output live in a second executable, shardscope-gui, next to the
// shardscope binary: it alone links OpenGL, GLFW, X11 and ImGui, so that the main binary
// starts without them. `shardscope gui ...` and `shardscope render ... -o x.png` run it with
// the same arguments (gui_main.cpp is its main).
#pragma once

namespace shardscope::app {

/// Keeps the command line, for run_gui_helper (call first thing in main).
void remember_command_line(int argc, char** argv);

/// Runs shardscope-gui with this process's arguments and returns its exit code. Where it
/// cannot start (missing, or its libraries cannot be loaded: the dynamic loader's message is
/// on stderr), says so and returns kExitUsage.
int run_gui_helper();

} // namespace shardscope::app
