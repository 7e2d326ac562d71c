// The window's view (MainView): one class, its panels one file each (panel_*.cpp). It draws from a
// `const Plan&` and the editor's text; the app (app/gui_app.cpp) owns the document, re-checks
// it, runs the verifier, and acts on what the view reports.
#pragma once

#include "render/gui/fonts.hpp"
#include "render/pictures.hpp"
#include "semantics/plan.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::render {

/// One statement's verification, as the verify panel shows it.
struct VerifyRow {
    std::uint32_t line = 0;
    std::string source;
    bool pass = false;
    std::string detail; ///< errors against the tolerance
};

/// The state of a background verification (the app fills it; the view only reads it).
struct VerifyState {
    bool running = false;
    bool finished = false;
    std::size_t done = 0, total = 0;
    double seconds = 0;
    std::string error;   ///< it could not run (syntax or plan errors, an exception)
    std::string setting; ///< "sim, 4 ranks, f32, random data, small sizes"
    std::vector<VerifyRow> rows;
};

/// One frame's scripted input, as if clicked or typed (consumed by MainView::frame).
struct Script {
    std::string pick;     ///< choose this file in the sample picker
    bool save = false;    ///< press Save
    bool save_as = false; ///< press Save as…
    bool open = false;    ///< press Open…
    std::string answer;   ///< type this path into the open prompt and press its OK
    int confirm = 0;      ///< the confirmation: 1 discard the changes, -1 cancel
    bool play = false;    ///< press the step-through's play/pause
};

/// What the view is given each frame.
struct ViewInput {
    std::string* text = nullptr;           ///< the editor's text (edited in place)
    const semantics::Plan* plan = nullptr; ///< the plan drawn (the last one that checked)
    const std::vector<Diagnostic>* diagnostics = nullptr; ///< of the current text
    bool stale = false;  ///< the text has syntax errors: plan is older
    double check_ms = 0; ///< how long the last re-check took
    const VerifyState* verify = nullptr;
    const std::vector<std::string>* samples = nullptr; ///< sample files for the picker
    std::string file;                                  ///< the open file ("" for a new one)
    std::string name;   ///< what the toolbar calls it: the file name, "untitled (copy of X)"
    bool dirty = false; ///< the text differs from the file (or is an unsaved copy, edited)
    std::string status; ///< the last save's or open's outcome ("" for none)
    bool status_error = false;
    /// Scripted interactions (the screenshot tests' --script): consumed like user input.
    Script* script = nullptr;
};

/// What the user asked for this frame.
struct ViewActions {
    bool text_changed = false;
    bool run_verify = false;
    bool save = false;              ///< save to the open file (never asked for an untitled text)
    std::string save_as;            ///< save to this path (and keep it as the open file)
    std::string open;               ///< open this file (the confirmation, if any, was given)
    bool open_copy = false;         ///< open it as an untitled copy (a sample: never written back)
    bool quit = false;              ///< close the window (the confirmation, if any, was given)
    bool toggle_fullscreen = false; ///< presenter mode's F11
};

class MainView {
public:
    enum class Panel { Mesh, Plan, Steps, Verify };

    explicit MainView(const Fonts& fonts) : fonts_(fonts) {}

    /// Draws the whole window for one frame.
    ViewActions frame(const ViewInput& in);

    Selection& selection() { return sel_; }
    void show_panel(Panel p) {
        panel_ = p;
        force_panel_ = true;
    }
    void set_teaching(bool on) { teaching_ = on; }
    /// The window is being closed: with unsaved changes asks first (ViewActions::quit).
    void request_quit() { pending_ = Pending{PendingKind::Quit, {}, false}; }
    bool teaching() const { return teaching_; }
    /// The presenter's text scale (teaching mode's Ctrl+= / Ctrl+- / Ctrl+0): pictures and
    /// the window's text.
    float scale() const { return scale_; }
    /// Keeps the selection valid for a new plan (statement in range, tensor present).
    void fit_selection(const semantics::Plan& plan);

private:
    void toolbar(const ViewInput& in, ViewActions& out);
    void editor_panel(const ViewInput& in, ViewActions& out);
    void mesh_panel(const ViewInput& in);
    void tiling_panel(const ViewInput& in);
    void plan_panel(const ViewInput& in);
    void steps_panel(const ViewInput& in);
    bool script_play_ = false; ///< this frame's scripted play/pause
    void verify_panel(const ViewInput& in, ViewActions& out);
    void teaching_panel(const ViewInput& in, ViewActions& out);
    /// Draws a picture filling the rest of the current window (or `height` px of it).
    void picture(const semantics::Plan& plan, View view, float height = -1);
    float font_size() const;
    /// Save, Save as, Open, the sample picker, Ctrl+S and Ctrl+O: prompts for a path and
    /// confirmation before replacing edited text.
    void file_actions(const ViewInput& in, ViewActions& out);
    /// Teaching mode's presenter keys (not while typing): PageDown/PageUp the next/previous
    /// statement, ←/→ the step-through's frames (showing it), Ctrl+= / Ctrl+- / Ctrl+0 the
    /// text scale, F11 full screen.
    void presenter_keys(const semantics::Plan& plan, ViewActions& out);
    /// Opening `path` (a copy when `copy`): at once, or after confirmation when edited.
    void ask_open(const ViewInput& in, const std::string& path, bool copy, ViewActions& out);

    enum class PendingKind { None, Open, Quit };
    struct Pending {
        PendingKind kind = PendingKind::None;
        std::string path;
        bool copy = false;
    };
    enum class Prompt { None, SaveAs, Open };

    Fonts fonts_;
    Selection sel_;
    Panel panel_ = Panel::Mesh;
    bool force_panel_ = false;
    bool teaching_ = false;
    int cursor_line_ = 0; ///< 1-based line of the editor's cursor
    int follow_line_ = 0; ///< the line last used to pick the statement
    float scale_ = 1.0f;
    bool playing_ = false; ///< the step-through plays a collective's schedule
    float speed_ = 1.0f;   ///< its steps per second
    double last_tick_ = 0;
    int shown_step_ = -1, shown_statement_ = -1; ///< the frame the message steps belong to
    Pending pending_;                            ///< waiting for the user's confirmation
    Prompt prompt_ = Prompt::None;
    bool prompt_opened_ = false;
    std::string prompt_text_; ///< the path typed into the prompt
    bool save_clicked_ = false, save_as_clicked_ = false, open_clicked_ = false;
    std::string picked_; ///< the sample chosen in the picker this frame
};

} // namespace shardscope::render
