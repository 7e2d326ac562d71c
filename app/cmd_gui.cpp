// `shardscope gui`: the desktop window (Dear ImGui + GLFW + OpenGL 3).
#include "commands.hpp"
#include "inputs.hpp"

#include "app/gui_app.hpp"
#include "app/gui_helper.hpp"

#include <cstdio>
#include <iostream>
#include <memory>

namespace shardscope::app {

void add_gui_command(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<GuiOptions>();
    auto* cmd = app.add_subcommand(
        "gui", "Open the desktop window: editor, mesh, tiling, plan, step-through, verify, "
               "totals, compare (the strategy search's candidates)");
    cmd->add_option("file", opts->file, "A notation file to open");
    cmd->add_option("--compare", opts->compare,
                    "Files to compare as strategies in the Compare panel (as check --compare "
                    "ranks them; a click opens one): --compare a.ein b.ein");
    cmd->add_option("--statement", opts->statement, "The statement shown first (1-based)");
    cmd->add_option("--tensor", opts->tensor, "The tensor tiled first");
    cmd->add_option("--panel", opts->panel, "The lower panel shown first")
        ->check(CLI::IsMember({"mesh", "plan", "steps", "verify", "totals", "compare"}));
    cmd->add_option("--step", opts->step, "The step-through frame shown first");
    cmd->add_flag("--teaching", opts->teaching,
                  "Teaching mode: large fonts, a sample picker, comments as narration");
    cmd->add_flag("--verify", opts->verify, "Start verifying on the sim backend at once");
    cmd->add_flag("--quiz", opts->quiz,
                  "Teaching mode with the quiz: each statement's placements and collectives "
                  "are hidden until you guess them");
    cmd->add_option("--ui-scale", opts->ui_scale,
                    "Scale fonts and widgets by this (default: the display's content scale)")
        ->check(CLI::Range(0.5, 4.0));
    cmd->add_option(
        "--size",
        [opts](const std::vector<std::string>& v) {
            int w = 0, h = 0;
            if (std::sscanf(v.front().c_str(), "%dx%d", &w, &h) != 2 || w < 200 || h < 150 ||
                w > 8192 || h > 8192)
                return false;
            opts->width = w;
            opts->height = h;
            return true;
        },
        "Window size, WxH (default 1400x900)");
    // Hidden, for the screenshot tests: render N frames, save the window as PNG, exit.
    cmd->add_option("--screenshot", opts->screenshot)->group("");
    cmd->add_option("--frames", opts->frames)->group("")->check(CLI::Range(1, 100000));
    cmd->add_option("--script", opts->script)->group("");
    cmd->callback([opts, &exit_code] {
#ifdef SHARDSCOPE_HAVE_GUI
        exit_code = run_gui(*opts);
#elif defined(SHARDSCOPE_GUI_HELPER)
        // The main binary: the window is shardscope-gui's (gui_helper.hpp).
        exit_code = run_gui_helper();
#else
        std::cerr << "shardscope: error: this shardscope was built without the GUI "
                     "(SHARDSCOPE_GUI=OFF, or libimgui-dev, libglfw3-dev and libgl-dev were "
                     "missing when it was configured): install them (scripts/setup.sh does) and "
                     "rebuild; 'shardscope render FILE -o OUT.svg' draws the pictures without "
                     "it\n";
        exit_code = kExitUsage;
#endif
    });
}

} // namespace shardscope::app
