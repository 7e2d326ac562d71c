// MainView: the window's layout, the toolbar, and what the panels share.
#include "render/gui/view.hpp"

#include "render/gui/imgui_canvas.hpp"
#include "render/palette.hpp"
#include "render/stepthrough.hpp"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <filesystem>

namespace shardscope::render {

float MainView::font_size() const {
    return (teaching_ ? 24.0f : 15.0f) * scale_;
}

void MainView::presenter_keys(const semantics::Plan& plan, ViewActions& out) {
    const ImGuiIO& io = ImGui::GetIO();
    if (!teaching_ || io.WantTextInput || prompt_ != Prompt::None ||
        pending_.kind != PendingKind::None)
        return;
    const int n = static_cast<int>(plan.statements.size());
    auto go = [&](int statement) {
        if (n == 0) return;
        sel_.statement = std::clamp(statement, 0, n - 1);
        sel_.tensor.clear();
        sel_.step = 0;
        fit_selection(plan);
    };
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageDown))) go(sel_.statement + 1);
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageUp))) go(sel_.statement - 1);
    const bool left = ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow));
    const bool right = ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow));
    if ((left || right) && n > 0) {
        const auto& s = plan.statements[static_cast<std::size_t>(sel_.statement)];
        const int last = static_cast<int>(step_frames(plan, s).size()) - 1;
        sel_.step = std::clamp(sel_.step + (right ? 1 : -1), 0, last);
        show_panel(Panel::Steps);
    }
    // The GLFW backend indexes KeysDown by GLFW key codes: '=', '-', '0' are ASCII; F11 is
    // GLFW_KEY_F11 (300).
    if (io.KeyCtrl && ImGui::IsKeyPressed('=')) scale_ = std::min(scale_ + 0.1f, 2.5f);
    if (io.KeyCtrl && ImGui::IsKeyPressed('-')) scale_ = std::max(scale_ - 0.1f, 0.6f);
    if (io.KeyCtrl && ImGui::IsKeyPressed('0')) scale_ = 1.0f;
    if (ImGui::IsKeyPressed(300, false)) out.toggle_fullscreen = true;
}

void MainView::fit_selection(const semantics::Plan& plan) {
    const int n = static_cast<int>(plan.statements.size());
    sel_.statement = std::clamp(sel_.statement, 0, std::max(n - 1, 0));
    sel_.value = -1;
    if (n == 0) return;
    const auto& s = plan.statements[static_cast<std::size_t>(sel_.statement)];
    bool found = false;
    for (const auto* t : statement_layouts(s))
        found = found || t->tensor == sel_.tensor;
    if (!found) sel_.tensor.clear();
    const auto* t = selected_layout(plan, sel_);
    const int rank = t ? static_cast<int>(t->indices.size()) : 0;
    if (sel_.row_dim >= rank || sel_.col_dim >= rank || sel_.row_dim == sel_.col_dim)
        sel_.row_dim = sel_.col_dim = -1;
}

void MainView::picture(const semantics::Plan& plan, View view, float height) {
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float h = height > 0 ? height : avail.y;
    if (avail.x < 10 || h < 10) return;
    ImGuiCanvas c(ImGui::GetWindowDrawList(), teaching_ ? fonts_.mono_large : fonts_.mono, true,
                  &fonts_.hatch);
    // The frame is cleared to white and the windows are transparent (apply_style): no
    // background fill, which software GL would pay for pixel by pixel.
    const Rect r{p.x, p.y, p.x + avail.x, p.y + h};
    draw_picture(c, r, plan, view, sel_, font_size());
    ImGui::Dummy({avail.x, h});
}

void MainView::toolbar(const ViewInput& in, ViewActions& out) {
    (void)out; // the file actions are taken in file_actions()
    const auto& plan = *in.plan;
    std::string name =
        in.name.empty()
            ? (in.file.empty() ? "untitled" : std::filesystem::path(in.file).filename().string())
            : in.name;
    if (in.dirty) name += " *"; // unsaved changes
    ImGui::TextUnformatted(name.c_str());
    ImGui::SameLine();
    save_clicked_ = ImGui::SmallButton("Save");
    ImGui::SameLine();
    save_as_clicked_ = ImGui::SmallButton("Save as…");
    ImGui::SameLine();
    open_clicked_ = ImGui::SmallButton("Open…");
    picked_.clear();
    if (in.samples && !in.samples->empty()) {
        ImGui::SameLine();
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
        if (ImGui::BeginCombo("##sample", "open a sample…")) {
            for (const auto& s : *in.samples) {
                const std::string n = std::filesystem::path(s).stem().string();
                if (ImGui::Selectable(n.c_str(), false)) picked_ = s;
            }
            ImGui::EndCombo();
        }
    }
    if (!in.status.empty()) {
        ImGui::SameLine();
        if (in.status_error)
            ImGui::TextColored({0.86f, 0.16f, 0.16f, 1}, "%s", in.status.c_str());
        else
            ImGui::TextDisabled("%s", in.status.c_str());
    }
    ImGui::SameLine();
    bool teaching = teaching_;
    if (ImGui::Checkbox("teaching", &teaching)) teaching_ = teaching;
    ImGui::SameLine();
    const int errors = static_cast<int>(
        std::count_if(in.diagnostics->begin(), in.diagnostics->end(),
                      [](const auto& d) { return d.severity == Severity::Error; }));
    if (errors)
        ImGui::TextColored({0.86f, 0.16f, 0.16f, 1}, "%d error%s", errors, errors == 1 ? "" : "s");
    else
        ImGui::TextColored({0.16f, 0.6f, 0.24f, 1}, "checked");
    ImGui::SameLine();
    ImGui::TextDisabled("(%.2f ms)", in.check_ms);
    // Statement and tensor.
    const int n = static_cast<int>(plan.statements.size());
    ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x * 0.5f);
    auto label = [&](int i) {
        const auto& s = plan.statements[static_cast<std::size_t>(i)];
        return std::to_string(i + 1) + ": " + s.pretty;
    };
    ImGui::PushFont(teaching_ ? fonts_.mono_large : fonts_.mono);
    if (ImGui::BeginCombo("##statement", n ? label(sel_.statement).c_str() : "no statement")) {
        for (int i = 0; i < n; ++i)
            if (ImGui::Selectable(label(i).c_str(), i == sel_.statement)) {
                sel_.statement = i;
                sel_.tensor.clear();
                sel_.step = 0;
                fit_selection(plan);
            }
        ImGui::EndCombo();
    }
    const semantics::TensorLayout* current = selected_layout(plan, sel_);
    if (n) {
        const auto& s = plan.statements[static_cast<std::size_t>(sel_.statement)];
        ImGui::SameLine();
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9);
        if (ImGui::BeginCombo("##tensor", current ? current->tensor.c_str() : "")) {
            for (const auto* t : statement_layouts(s)) {
                const std::string l = t->tensor + (t == &s.result ? "  (result)" : "");
                if (ImGui::Selectable(l.c_str(), t == current)) {
                    sel_.tensor = t->tensor;
                    sel_.value = -1;
                    sel_.row_dim = sel_.col_dim = -1;
                }
            }
            ImGui::EndCombo();
        }
        // Rank above 2: the two dimensions drawn.
        if (current && current->indices.size() > 2) {
            const int rank = static_cast<int>(current->indices.size());
            const Drawn d = drawn_of(sel_, *current);
            int rows = d.row < 0 ? rank - 2 : d.row;
            int cols = d.col < 0 ? rank - 1 : d.col;
            auto dim_combo = [&](const char* id, int& v, int other) {
                ImGui::SameLine();
                ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
                bool changed = false;
                if (ImGui::BeginCombo(id, current->indices[static_cast<std::size_t>(v)].c_str())) {
                    for (int d = 0; d < rank; ++d)
                        if (d != other &&
                            ImGui::Selectable(current->indices[static_cast<std::size_t>(d)].c_str(),
                                              d == v)) {
                            v = d;
                            changed = true;
                        }
                    ImGui::EndCombo();
                }
                return changed;
            };
            ImGui::SameLine();
            ImGui::TextUnformatted("rows");
            const bool a = dim_combo("##rows", rows, cols);
            ImGui::SameLine();
            ImGui::TextUnformatted("cols");
            const bool b = dim_combo("##cols", cols, rows);
            if (a || b) {
                sel_.row_dim = rows;
                sel_.col_dim = cols;
            }
        }
    }
    ImGui::PopFont();
}

ViewActions MainView::frame(const ViewInput& in) {
    ViewActions out;
    const ImGuiViewport* vp = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(vp->WorkPos);
    ImGui::SetNextWindowSize(vp->WorkSize);
    ImGui::Begin("shardscope", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                     ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus);
    script_play_ = in.script && in.script->play;
    presenter_keys(*in.plan, out);
    ImGui::GetIO().FontGlobalScale = teaching_ ? scale_ : 1.0f;
    ImGui::PushFont(teaching_ ? fonts_.ui_large : fonts_.ui);
    toolbar(in, out);
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    ImGui::BeginChild("left", {avail.x * (teaching_ ? 0.42f : 0.38f), 0}, true);
    if (teaching_)
        teaching_panel(in, out);
    else
        editor_panel(in, out);
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("right", {0, 0}, false);
    const float h = ImGui::GetContentRegionAvail().y;
    // Teaching mode's step-through takes the whole right side: its frames draw the tilings
    // before and after each step, large enough for a projector (at 1280x720 and up).
    if (!(teaching_ && panel_ == Panel::Steps)) {
        ImGui::BeginChild("tiling", {0, h * 0.55f}, true);
        tiling_panel(in);
        ImGui::EndChild();
    }
    ImGui::BeginChild("lower", {0, 0}, true);
    if (ImGui::BeginTabBar("panels")) {
        auto tab = [&](const char* name, Panel p) {
            ImGuiTabItemFlags f = 0;
            if (force_panel_ && panel_ == p) f |= ImGuiTabItemFlags_SetSelected;
            const bool open = ImGui::BeginTabItem(name, nullptr, f);
            if (open && !force_panel_) panel_ = p;
            return open;
        };
        if (tab("Mesh", Panel::Mesh)) {
            mesh_panel(in);
            ImGui::EndTabItem();
        }
        if (tab("Plan", Panel::Plan)) {
            plan_panel(in);
            ImGui::EndTabItem();
        }
        if (tab("Step-through", Panel::Steps)) {
            steps_panel(in);
            ImGui::EndTabItem();
        }
        if (tab("Verify", Panel::Verify)) {
            verify_panel(in, out);
            ImGui::EndTabItem();
        }
        ImGui::EndTabBar();
        force_panel_ = false;
    }
    ImGui::EndChild();
    ImGui::EndChild();
    file_actions(in, out);
    ImGui::PopFont();
    ImGui::End();
    return out;
}

void MainView::ask_open(const ViewInput& in, const std::string& path, bool copy, ViewActions& out) {
    if (in.dirty) {
        pending_ = Pending{PendingKind::Open, path, copy};
        return;
    }
    out.open = path;
    out.open_copy = copy;
}

void MainView::file_actions(const ViewInput& in, ViewActions& out) {
    Script none;
    Script& script = in.script ? *in.script : none;
    const ImGuiIO& io = ImGui::GetIO();
    // The GLFW backend indexes KeysDown by GLFW key codes: ASCII for letters.
    const bool ctrl_s = io.KeyCtrl && ImGui::IsKeyPressed('S', false);
    const bool ctrl_o = io.KeyCtrl && ImGui::IsKeyPressed('O', false);
    const bool no_dialog = prompt_ == Prompt::None && pending_.kind == PendingKind::None;
    if (no_dialog) {
        if (save_clicked_ || script.save || ctrl_s) {
            if (in.file.empty()) {
                prompt_ = Prompt::SaveAs; // an untitled text (a sample's copy): ask where
            } else {
                out.save = true;
            }
        }
        if (save_as_clicked_ || script.save_as) prompt_ = Prompt::SaveAs;
        if (open_clicked_ || script.open || ctrl_o) prompt_ = Prompt::Open;
        const std::string pick = !script.pick.empty() ? script.pick : picked_;
        if (!pick.empty()) ask_open(in, pick, true, out);
        if (prompt_ != Prompt::None) {
            prompt_opened_ = false;
            prompt_text_ = prompt_ == Prompt::SaveAs && !in.file.empty() ? in.file
                           : prompt_ == Prompt::SaveAs                   ? "untitled.ein"
                                                                         : "";
        }
    }
    // The path prompt.
    if (prompt_ != Prompt::None) {
        const char* id = prompt_ == Prompt::SaveAs ? "Save as" : "Open";
        if (!prompt_opened_) {
            ImGui::OpenPopup(id);
            prompt_opened_ = true;
        }
        ImGui::SetNextWindowSize({ImGui::GetFontSize() * 32, 0});
        if (ImGui::BeginPopupModal(id, nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
            ImGui::TextUnformatted(prompt_ == Prompt::SaveAs ? "Save the program to the file:"
                                                             : "Open the file:");
            if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
            ImGui::SetNextItemWidth(ImGui::GetFontSize() * 30);
            bool ok =
                ImGui::InputText("##path", &prompt_text_, ImGuiInputTextFlags_EnterReturnsTrue);
            ok = ImGui::Button(prompt_ == Prompt::SaveAs ? "Save" : "Open") || ok;
            ImGui::SameLine();
            bool cancel = ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGuiKey_Escape);
            if (!script.answer.empty()) {
                prompt_text_ = script.answer;
                ok = true;
            }
            if (script.confirm < 0) cancel = true;
            if (ok && !prompt_text_.empty()) {
                if (prompt_ == Prompt::SaveAs)
                    out.save_as = prompt_text_;
                else
                    ask_open(in, prompt_text_, false, out);
                cancel = true;
            }
            if (cancel) {
                prompt_ = Prompt::None;
                ImGui::CloseCurrentPopup();
            }
            ImGui::EndPopup();
        } else {
            prompt_ = Prompt::None;
        }
        return;
    }
    // Confirmation before replacing or closing edited text.
    if (pending_.kind != PendingKind::None) {
        const char* id = "Unsaved changes";
        if (!ImGui::IsPopupOpen(id)) ImGui::OpenPopup(id);
        if (ImGui::BeginPopupModal(id, nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
            const std::string what =
                pending_.kind == PendingKind::Quit
                    ? "Close the window?"
                    : "Open " + std::filesystem::path(pending_.path).filename().string() +
                          " instead?";
            ImGui::TextUnformatted(("The program has unsaved changes. " + what).c_str());
            ImGui::TextDisabled("Discarding them loses the edits; Cancel keeps them (then Save).");
            const bool discard = ImGui::Button("Discard changes") || script.confirm > 0;
            ImGui::SameLine();
            const bool cancel = ImGui::Button("Cancel") || script.confirm < 0 ||
                                ImGui::IsKeyPressed(ImGuiKey_Escape);
            if (discard) {
                if (pending_.kind == PendingKind::Quit) {
                    out.quit = true;
                } else {
                    out.open = pending_.path;
                    out.open_copy = pending_.copy;
                }
            }
            if (discard || cancel) {
                pending_ = {};
                ImGui::CloseCurrentPopup();
            }
            ImGui::EndPopup();
        }
    }
}

} // namespace shardscope::render
