// The window's view (MainView): one class, its panels one file each (panel_*.cpp). It draws from a
// `const Plan&` and the editor's text; the app (app/gui_app.cpp) owns the document, re-checks
// it, runs the verifier, and acts on what the view reports.
#pragma once

#include "render/gui/fonts.hpp"
#include "render/pictures.hpp"
#include "semantics/plan.hpp"
#include "semantics/search.hpp"
#include "semantics/totals.hpp"

#include <cstdint>
#include <map>
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

/// One row of the Compare panel: a candidate of the strategy search (semantics::search), best
/// first.
struct CompareRow {
    int rank = 0;          ///< 1 for the best; 0: not ranked (a file with errors)
    std::string file;      ///< `gui --compare`: the file (its row opens it when clicked)
    int errors = 0;        ///< `gui --compare`: the file's errors
    std::string mesh;      ///< "dp=8 tp=8" (axes of size 1 left out)
    std::string mesh_spec; ///< every axis, for re-checking the file there: "dp=8,fsdp=1,tp=8"
    double step_s = 0;     ///< compute + exposed communication
    double compute_s = 0;  ///< compute
    double exposed_s = 0;  ///< the communication the overlap model cannot hide
    double comm_s = 0;     ///< all of the communication
    double memory_bytes = 0;
    bool fits = true; ///< memory_bytes <= the preset's HBM
    std::size_t equivalents = 1;
    std::string why; ///< rank > 1: why it loses to #1 (semantics::explain_loss)
};

/// The Compare panel's rows: the search's top `top` candidates ordered as `check --compare`
/// orders files (those that fit in `hbm_bytes` first, then the search's ranking by step
/// time), each loser's line from semantics::explain_loss ("does not fit: ..." first when the
/// best fits and it does not).
std::vector<CompareRow> compare_rows(const semantics::SearchResult& result, double hbm_bytes,
                                     std::size_t top);

/// The state of a background strategy search (the app fills it; the view only reads it).
struct CompareState {
    bool running = false;
    bool finished = false;
    std::size_t checked = 0, total = 0;
    double seconds = 0;
    std::int64_t devices = 0; ///< what was searched
    double hbm_bytes = 0;     ///< the preset's HBM per device
    std::string hardware;
    std::string summary; ///< "64 devices over dp, fsdp, tp: 28 meshes, 28 checked, 12 kept"
    std::string error;   ///< it could not run (errors in the file, no mesh axes, ...)
    std::vector<CompareRow> rows;
    /// `gui --compare A B...`: the files side by side as `check --compare` ranks them (in
    /// rank order, those with errors last) and the note when they are different models
    std::vector<CompareRow> files;
    std::string files_note;
    std::string shown_mesh; ///< the plan shown is the file re-checked at this mesh ("": as written)
    int shown_rank = 0;     ///< the row it belongs to (0: none)
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
    bool quiz = false;    ///< tick or untick the quiz
    int choose_question = -1, choose_choice = -1;      ///< pick this choice of this quiz question
    bool next_sample = false, previous_sample = false; ///< teaching mode's course buttons
    bool export_view = false;                          ///< press Export…
    int export_kind = -1;            ///< in the export prompt, pick the view (0 tiling .. 3 steps)
    std::int64_t search_devices = 0; ///< the Compare panel: type this device count, press Search
    int pick_candidate = 0;          ///< the Compare panel: click the row of this rank
    int pick_file = 0; ///< the Compare panel: click this row (1-based) of the files compared
};

/// What the view is given each frame.
struct ViewInput {
    std::string* text = nullptr;           ///< the editor's text (edited in place)
    const semantics::Plan* plan = nullptr; ///< the plan drawn (the last one that checked)
    /// Its program totals (the totals panel; nullptr: not shown)
    const semantics::ProgramTotals* totals = nullptr;
    const std::vector<Diagnostic>* diagnostics = nullptr; ///< of the current text
    bool stale = false;  ///< the text has syntax errors: plan is older
    double check_ms = 0; ///< how long the last re-check took
    const VerifyState* verify = nullptr;
    const CompareState* compare = nullptr;             ///< the Compare panel (nullptr: not shown)
    const std::vector<std::string>* samples = nullptr; ///< sample files, in course order
    /// The course's title of each sample (samples/COURSE; "" where it has none)
    const std::vector<std::string>* sample_titles = nullptr;
    std::string copy_of; ///< the sample the untitled text is a copy of ("" for none)
    std::string file;    ///< the open file ("" for a new one)
    std::string name;    ///< what the toolbar calls it: the file name, "untitled (copy of X)"
    bool dirty = false;  ///< the text differs from the file (or is an unsaved copy, edited)
    std::string status;  ///< the last save's or open's outcome ("" for none)
    bool status_error = false;
    /// Scripted interactions (the screenshot tests' --script): consumed like user input.
    Script* script = nullptr;
};

/// What the user asked for this frame.
struct ViewActions {
    bool text_changed = false;
    bool run_verify = false;
    std::int64_t run_search = 0; ///< the Compare panel's Search: over this many devices
    /// The Compare panel: show the plan of this candidate (the file re-checked at its mesh,
    /// "dp=8,fsdp=1,tp=8"); `show_written` back to the mesh as written
    std::string show_mesh;
    int show_rank = 0;
    bool show_written = false;
    bool save = false;              ///< save to the open file (never asked for an untitled text)
    std::string save_as;            ///< save to this path (and keep it as the open file)
    std::string open;               ///< open this file (the confirmation, if any, was given)
    bool open_copy = false;         ///< open it as an untitled copy (a sample: never written back)
    bool quit = false;              ///< close the window (the confirmation, if any, was given)
    bool toggle_fullscreen = false; ///< presenter mode's F11
    /// Export…: write this view of the current selection to this .svg or .png (as `render`
    /// does, the whole picture at its natural size).
    std::string export_path;
    View export_view = View::Tiling;
    Selection export_selection;
};

class MainView {
public:
    enum class Panel { Mesh, Plan, Steps, Verify, Totals, Compare };

    explicit MainView(const Fonts& fonts) : fonts_(fonts) {}
    /// The fonts rebuilt (another content scale).
    void set_fonts(const Fonts& fonts) { fonts_ = fonts; }

    /// Draws the whole window for one frame.
    ViewActions frame(const ViewInput& in);

    Selection& selection() { return sel_; }
    void show_panel(Panel p) {
        panel_ = p;
        force_panel_ = true;
    }
    void set_teaching(bool on) {
        teaching_ = on;
        if (!on) quiz_ = false;
    }
    /// The quiz (teaching mode): the current statement's placements and collectives are
    /// hidden until its questions (quiz_questions) are answered; then revealed, right or wrong.
    void set_quiz(bool on) {
        quiz_ = on;
        if (on) teaching_ = true;
    }
    bool quiz() const { return quiz_; }
    /// "hidden", or "revealed, R of N right", for the current statement.
    std::string quiz_status(const semantics::Plan& plan) const;
    /// The display's content scale (GLFW): the pictures' text scales with it (the fonts and
    /// the style are the app's, built at that scale).
    void set_dpi_scale(float s) { dpi_ = s; }
    float dpi_scale() const { return dpi_; }
    /// Another document: the quiz's answers, zoom and pan start afresh.
    void new_document();
    /// The tiling canvas's zoom and pan (mouse wheel, drag; the reset button).
    float zoom() const { return zoom_; }
    Vec2 pan() const { return pan_; }
    /// The device the pointer is over in the mesh view (-1: none): its tiles are outlined.
    std::int64_t highlighted() const { return highlight_; }
    /// The panes' splits: the left pane's share of the width, the tiling's of the right side.
    float left_split() const { return left_frac_[teaching_ ? 1 : 0]; }
    float top_split() const { return top_frac_; }
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
    void totals_panel(const ViewInput& in);
    void compare_panel(const ViewInput& in, ViewActions& out);
    int search_devices_ = 0; ///< the Compare panel's device-count field (0: the file's count)
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
    enum class Prompt { None, SaveAs, Open, Export };

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
    bool export_clicked_ = false, next_clicked_ = false, previous_clicked_ = false;
    int export_kind_ = 0; ///< the export prompt's view: tiling, mesh, plan, steps
    // The quiz: per statement (by its text), the choice made for each question (-1: none).
    bool quiz_ = false;
    std::map<std::string, std::vector<int>> quiz_chosen_;
    bool quiz_hidden(const semantics::Plan& plan, int statement) const;
    /// The questions of the current statement (or, once answered, the verdict).
    void quiz_panel(const semantics::Plan& plan, const Script& script);
    float dpi_ = 1;
    float left_frac_[2] = {0.38f, 0.42f}; ///< normal, teaching
    float top_frac_ = 0.55f;
    float zoom_ = 1;
    Vec2 pan_{0, 0};
    std::int64_t highlight_ = -1, hovered_now_ = -1; ///< last frame's and this frame's
    /// A splitter between panes: a thin bar that drags `frac` of `total` pixels.
    void splitter(const char* id, bool vertical, float& frac, float total);
};

} // namespace shardscope::render
