// MainView: the window's layout, the toolbar, and what the panels share.
#include "render/gui/view.hpp"

#include "render/gui/imgui_canvas.hpp"
#include "render/palette.hpp"
#include "render/stepthrough.hpp"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace shardscope::render {

float MainView::font_size() const {
    return (teaching_ ? 24.0f : 15.0f) * scale_ * dpi_;
}

void MainView::new_document() {
    quiz_chosen_.clear();
    zoom_ = 1;
    pan_ = {0, 0};
    highlight_ = hovered_now_ = -1;
}

void MainView::splitter(const char* id, bool vertical, float& frac, float total) {
    const float thick = 6 * dpi_;
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const ImVec2 size = vertical ? ImVec2{thick, avail.y} : ImVec2{avail.x, thick};
    if (size.x < 1 || size.y < 1) return;
    ImGui::InvisibleButton(id, size);
    const bool hot = ImGui::IsItemHovered() || ImGui::IsItemActive();
    if (hot)
        ImGui::SetMouseCursor(vertical ? ImGuiMouseCursor_ResizeEW : ImGuiMouseCursor_ResizeNS);
    if (ImGui::IsItemActive() && total > 0) {
        const ImGuiIO& io = ImGui::GetIO();
        frac =
            std::clamp(frac + (vertical ? io.MouseDelta.x : io.MouseDelta.y) / total, 0.15f, 0.85f);
    }
    // A grip line in the middle, darker while dragged or pointed at.
    const ImU32 col = hot ? IM_COL32(90, 90, 110, 255) : IM_COL32(200, 200, 210, 255);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    if (vertical)
        dl->AddRectFilled({p.x + thick / 2 - 1, p.y}, {p.x + thick / 2 + 1, p.y + size.y}, col);
    else
        dl->AddRectFilled({p.x, p.y + thick / 2 - 1}, {p.x + size.x, p.y + thick / 2 + 1}, col);
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
    Selection sel = sel_;
    if (view == View::Tiling) {
        sel.zoom = zoom_;
        sel.pan = pan_;
        sel.highlight = highlight_;
    }
    // Clipped to its area: a zoomed or panned tiling stays off the panel's controls.
    ImGui::PushClipRect({r.x0, r.y0}, {r.x1, r.y1}, true);
    draw_picture(c, r, plan, view, sel, font_size());
    c.flush_fills();
    ImGui::PopClipRect();
    if (c.hovered_device() >= 0) hovered_now_ = c.hovered_device();
    if (view != View::Tiling) {
        ImGui::Dummy({avail.x, h});
        return;
    }
    // The tiling canvas: the wheel zooms about the pointer, a drag pans.
    ImGui::SetCursorScreenPos(p);
    ImGui::InvisibleButton("##tiling-canvas", {avail.x, h});
    const ImGuiIO& io = ImGui::GetIO();
    if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 0.0f)) {
        pan_.x += io.MouseDelta.x;
        pan_.y += io.MouseDelta.y;
    }
    if (ImGui::IsItemHovered() && io.MouseWheel != 0) {
        const float z = std::clamp(zoom_ * std::pow(1.25f, io.MouseWheel), 1.0f, 8.0f);
        // The point under the pointer stays where it is.
        const float mx = io.MousePos.x - p.x, my = io.MousePos.y - p.y;
        pan_.x = mx - (mx - pan_.x) * (z / zoom_);
        pan_.y = my - (my - pan_.y) * (z / zoom_);
        zoom_ = z;
    }
    // Keep some of the picture in view.
    pan_.x = std::clamp(pan_.x, avail.x - avail.x * zoom_ - avail.x / 2, avail.x / 2);
    pan_.y = std::clamp(pan_.y, h - h * zoom_ - h / 2, h / 2);
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
    ImGui::SameLine();
    export_clicked_ = ImGui::SmallButton("Export…");
    picked_.clear();
    next_clicked_ = previous_clicked_ = false;
    if (in.samples && !in.samples->empty()) {
        // The samples in course order (samples/COURSE), numbered, with their titles.
        ImGui::SameLine();
        if (teaching_) {
            previous_clicked_ = ImGui::ArrowButton("##previous-sample", ImGuiDir_Left);
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("the previous sample of the course");
            ImGui::SameLine();
        }
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
        if (ImGui::BeginCombo("##sample", "open a sample…", ImGuiComboFlags_HeightLarge)) {
            for (std::size_t i = 0; i < in.samples->size(); ++i) {
                const auto& s = (*in.samples)[i];
                const std::string title = in.sample_titles && i < in.sample_titles->size()
                                              ? (*in.sample_titles)[i]
                                              : std::string();
                const std::string n =
                    std::to_string(i + 1) + ". " +
                    (title.empty() ? std::filesystem::path(s).stem().string() : title) + "##" + s;
                if (ImGui::Selectable(n.c_str(), s == in.copy_of)) picked_ = s;
            }
            ImGui::EndCombo();
        }
        if (teaching_) {
            ImGui::SameLine();
            next_clicked_ = ImGui::ArrowButton("##next-sample", ImGuiDir_Right);
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("the next sample of the course");
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
    if (ImGui::Checkbox("teaching", &teaching)) set_teaching(teaching);
    ImGui::SameLine();
    bool quiz = quiz_;
    if (ImGui::Checkbox("quiz", &quiz)) set_quiz(quiz);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("hide each statement's placements and collectives until you guess");
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
    if (in.script && in.script->quiz) set_quiz(!quiz_);
    // The mesh's hover of the last frame outlines that device's tiles in this one.
    highlight_ = hovered_now_;
    hovered_now_ = -1;
    presenter_keys(*in.plan, out);
    ImGui::GetIO().FontGlobalScale = teaching_ ? scale_ : 1.0f;
    ImGui::PushFont(teaching_ ? fonts_.ui_large : fonts_.ui);
    toolbar(in, out);
    // Resizable panes: the left (editor or narration) and the right side split by a bar that
    // drags, the right side's tiling and lower panels by another.
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float thick = 6 * dpi_;
    float& left = left_frac_[teaching_ ? 1 : 0];
    ImGui::BeginChild("left", {(avail.x - thick) * left, 0}, true);
    if (teaching_)
        teaching_panel(in, out);
    else
        editor_panel(in, out);
    ImGui::EndChild();
    ImGui::SameLine(0, 0);
    splitter("##split-left", true, left, avail.x - thick);
    ImGui::SameLine(0, 0);
    ImGui::BeginChild("right", {0, 0}, false);
    const float h = ImGui::GetContentRegionAvail().y;
    const bool hidden = quiz_ && quiz_hidden(*in.plan, sel_.statement);
    // Teaching mode's step-through takes the whole right side: its frames draw the tilings
    // before and after each step, large enough for a projector (at 1280x720 and up). The
    // quiz's questions stay in view until answered.
    if (!(teaching_ && panel_ == Panel::Steps) || hidden) {
        // While the quiz hides the statement, its questions take most of the height (the
        // panels below only say that they are hidden).
        ImGui::BeginChild(
            "tiling", {0, (h - thick) * (hidden ? std::max(top_frac_, 0.8f) : top_frac_)}, true);
        if (quiz_) quiz_panel(*in.plan, in.script ? *in.script : Script{});
        if (!hidden) tiling_panel(in);
        ImGui::EndChild();
        ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, {0, 0});
        splitter("##split-top", false, top_frac_, h - thick);
        ImGui::PopStyleVar();
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
        if (tab("Totals", Panel::Totals)) {
            totals_panel(in);
            ImGui::EndTabItem();
        }
        if (in.compare != nullptr && tab("Compare", Panel::Compare)) {
            compare_panel(in, out);
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
        if (export_clicked_ || script.export_view) {
            prompt_ = Prompt::Export;
            // The view in front: the step-through when it has the right side, else the tiling.
            export_kind_ = panel_ == Panel::Steps ? 3 : panel_ == Panel::Plan ? 2 : 0;
        }
        std::string pick = !script.pick.empty() ? script.pick : picked_;
        // Teaching mode's course: the next or previous sample after the one open.
        if (in.samples && !in.samples->empty() &&
            (next_clicked_ || previous_clicked_ || script.next_sample || script.previous_sample)) {
            const auto& all = *in.samples;
            const auto at = std::find(all.begin(), all.end(), in.copy_of);
            const bool next = next_clicked_ || script.next_sample;
            if (at == all.end())
                pick = next ? all.front() : all.back();
            else if (next && at + 1 != all.end())
                pick = *(at + 1);
            else if (!next && at != all.begin())
                pick = *(at - 1);
        }
        if (!pick.empty()) ask_open(in, pick, true, out);
        if (prompt_ != Prompt::None) {
            prompt_opened_ = false;
            static const char* const kViews[] = {"tiling", "mesh", "plan", "steps"};
            prompt_text_ = prompt_ == Prompt::SaveAs && !in.file.empty() ? in.file
                           : prompt_ == Prompt::SaveAs                   ? "untitled.ein"
                           : prompt_ == Prompt::Export ? std::string(kViews[export_kind_]) + ".png"
                                                       : "";
        }
    }
    // The path prompt.
    if (prompt_ != Prompt::None) {
        const char* id = prompt_ == Prompt::SaveAs ? "Save as"
                         : prompt_ == Prompt::Open ? "Open"
                                                   : "Export the view";
        if (!prompt_opened_) {
            ImGui::OpenPopup(id);
            prompt_opened_ = true;
        }
        ImGui::SetNextWindowSize({ImGui::GetFontSize() * 32, 0});
        if (ImGui::BeginPopupModal(id, nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
            ImGui::TextUnformatted(prompt_ == Prompt::SaveAs ? "Save the program to the file:"
                                   : prompt_ == Prompt::Open
                                       ? "Open the file:"
                                       : "Write the picture to (.png or .svg):");
            if (prompt_ == Prompt::Export) {
                // Which picture: the statement and tensor selected now, at their natural size.
                static const char* const kViews[] = {"tiling", "mesh", "plan", "steps"};
                if (script.export_kind >= 0 && script.export_kind < 4)
                    export_kind_ = script.export_kind;
                for (int k = 0; k < 4; ++k) {
                    if (k) ImGui::SameLine();
                    ImGui::RadioButton(kViews[k], &export_kind_, k);
                }
            }
            if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
            ImGui::SetNextItemWidth(ImGui::GetFontSize() * 30);
            bool ok =
                ImGui::InputText("##path", &prompt_text_, ImGuiInputTextFlags_EnterReturnsTrue);
            ok = ImGui::Button(prompt_ == Prompt::SaveAs ? "Save"
                               : prompt_ == Prompt::Open ? "Open"
                                                         : "Export") ||
                 ok;
            ImGui::SameLine();
            bool cancel = ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGuiKey_Escape);
            if (!script.answer.empty()) {
                prompt_text_ = script.answer;
                ok = true;
            }
            if (script.confirm < 0) cancel = true;
            if (ok && !prompt_text_.empty()) {
                if (prompt_ == Prompt::SaveAs) {
                    out.save_as = prompt_text_;
                } else if (prompt_ == Prompt::Export) {
                    static const View kViews[] = {View::Tiling, View::Mesh, View::Plan,
                                                  View::Steps};
                    out.export_path = prompt_text_;
                    out.export_view = kViews[export_kind_];
                    out.export_selection = sel_;
                } else {
                    ask_open(in, prompt_text_, false, out);
                }
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
