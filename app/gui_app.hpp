// The desktop window: the ImGui/GLFW loop around render::View (only with SHARDSCOPE_GUI).
#pragma once

#include "frontend/document.hpp"

#include <string>
#include <vector>

namespace shardscope::app {

struct GuiOptions {
    std::string file; ///< empty: a new program (or the first sample in teaching mode)
    /// `--compare A B...`: the files side by side in the Compare panel (the first opened when
    /// `file` is empty)
    std::vector<std::string> compare;
    std::string screenshot; ///< hidden: save the window after `frames` frames, then exit
    int frames = 3;
    int width = 1400, height = 900;
    int statement = 0; ///< 1-based; 0: the first
    std::string tensor;
    std::string panel; ///< mesh, plan, steps, verify, totals, compare: the lower panel shown first
    int step = 0;
    bool teaching = false;
    bool verify = false; ///< start the verify run at once (screenshots wait for it)
    bool quiz = false;   ///< teaching mode's quiz from the start
    float ui_scale = 0;  ///< > 0: the interface's scale instead of the display's content scale
    /// Hidden, for the tests: interactions played one per frame after the first `frames`
    /// frames, separated by ';': `type:TEXT` (appended to the text, as typed; \n for a new
    /// line), `key:K` (K: a letter, `=`, `-`, `0`, `pagedown`, `pageup`, `left`, `right`,
    /// `f11`, each optionally after `ctrl+`), `save`, `save-as`, `open`, `pick:FILE` (the sample
    /// picker), `answer:PATH` (typed into the path prompt, then OK), `discard`, `cancel`,
    /// `close` (the window's close button), `play` (the step-through's play/pause),
    /// `sleep:MS`, `wait`; the Compare panel: `search:N` (type N devices, press Search),
    /// `wait-search` (until it is done), `candidate:K` (click the row of rank K), `compared-file:K`
    /// (click the K-th row of the files compared); the quiz: `quiz` (tick/untick), `choose:Q:C`
    /// (choice C of question Q, 0-based); the course: `next-sample`, `previous-sample`; `export`
    /// (Export…), then `export-view:tiling|mesh|plan|steps` and `answer:PATH`; the pointer:
    /// `mouse:X,Y`, `press`, `release` (the left button), `wheel:N`; `ui-scale:S` (as if the window
    /// moved to a display of content scale S: the fonts and style are rebuilt); `dump:FILE` (every
    /// text the window draws in the next frame, widgets and pictures, written to FILE). The final
    /// title and status (and why a verify run could not start), the statement, step, scale, full
    /// screen, quiz, zoom, pan, highlighted device, splits, content scale and font size are printed
    /// to stdout.
    std::string script;
};

/// Why a verify run could not start, for the verify panel: the errors of the program as
/// checked at small sizes, with their lines, codes and fixes (never just "it has errors").
std::string verify_errors(const frontend::CheckedText& checked);

/// Runs the window until it is closed (or the screenshot is written). Returns the exit code.
int run_gui(const GuiOptions& options);

} // namespace shardscope::app
