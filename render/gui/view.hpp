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
};

/// What the user asked for this frame.
struct ViewActions {
    bool text_changed = false;
    bool run_verify = false;
    bool save = false;
    std::string open; ///< a sample to open
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
    bool teaching() const { return teaching_; }
    /// Keeps the selection valid for a new plan (statement in range, tensor present).
    void fit_selection(const semantics::Plan& plan);

private:
    void toolbar(const ViewInput& in, ViewActions& out);
    void editor_panel(const ViewInput& in, ViewActions& out);
    void mesh_panel(const ViewInput& in);
    void tiling_panel(const ViewInput& in);
    void plan_panel(const ViewInput& in);
    void steps_panel(const ViewInput& in);
    void verify_panel(const ViewInput& in, ViewActions& out);
    void teaching_panel(const ViewInput& in, ViewActions& out);
    /// Draws a picture filling the rest of the current window (or `height` px of it).
    void picture(const semantics::Plan& plan, View view, float height = -1);
    float font_size() const;

    Fonts fonts_;
    Selection sel_;
    Panel panel_ = Panel::Mesh;
    bool force_panel_ = false;
    bool teaching_ = false;
    int cursor_line_ = 0; ///< 1-based line of the editor's cursor
    int follow_line_ = 0; ///< the line last used to pick the statement
};

} // namespace shardscope::render
