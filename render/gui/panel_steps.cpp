// The step-through panel: a statement's intermediates one step at a time, the tiling before
// and after each collective.
#include "render/gui/view.hpp"
#include "render/stepthrough.hpp"

#include <imgui.h>

#include <algorithm>

namespace shardscope::render {

void MainView::steps_panel(const ViewInput& in) {
    const auto& plan = *in.plan;
    if (plan.statements.empty()) {
        ImGui::TextDisabled("no statement");
        return;
    }
    if (quiz_hidden(plan, sel_.statement)) {
        ImGui::TextDisabled("(quiz: the step-through is hidden until you answer)");
        return;
    }
    const auto& s = plan.statements[static_cast<std::size_t>(sel_.statement)];
    const int last = static_cast<int>(step_frames(plan, s).size()) - 1;
    sel_.step = std::clamp(sel_.step, 0, last);
    if (ImGui::ArrowButton("##prev", ImGuiDir_Left) && sel_.step > 0) --sel_.step;
    ImGui::SameLine();
    if (ImGui::ArrowButton("##next", ImGuiDir_Right) && sel_.step < last) ++sel_.step;
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
    ImGui::SliderInt("##frame", &sel_.step, 0, last, "step %d");
    // (Teaching mode takes the arrows everywhere: presenter_keys.)
    if (!teaching_ && ImGui::IsWindowFocused(ImGuiFocusedFlags_RootAndChildWindows) &&
        !ImGui::GetIO().WantTextInput) {
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow)) && sel_.step > 0)
            --sel_.step;
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow)) && sel_.step < last)
            ++sel_.step;
    }
    // A collective's frame: its schedule step by step (0: the whole collective), by hand or
    // played at a chosen speed.
    const auto frames = step_frames(plan, s);
    const auto& f = frames[static_cast<std::size_t>(sel_.step)];
    if (sel_.step != shown_step_ || sel_.statement != shown_statement_) {
        // Another frame: it starts as the whole collective, not playing.
        if (shown_step_ >= 0) sel_.substep = 0;
        playing_ = false;
        shown_step_ = sel_.step;
        shown_statement_ = sel_.statement;
    }
    const int subs =
        f.collective ? static_cast<int>(
                           collective_schedule(plan.mesh, s.steps[static_cast<std::size_t>(f.step)])
                               .steps.size())
                     : 0;
    if (subs > 0) {
        sel_.substep = std::clamp(sel_.substep, 0, subs);
        ImGui::SameLine();
        if (ImGui::SmallButton(playing_ ? "pause" : "play") || script_play_) {
            playing_ = !playing_;
            if (playing_ && sel_.substep >= subs) sel_.substep = 0;
            last_tick_ = ImGui::GetTime();
        }
        ImGui::SameLine();
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10);
        ImGui::SliderInt("##message", &sel_.substep, 0, subs,
                         sel_.substep == 0 ? "whole collective" : "message step %d");
        ImGui::SameLine();
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
        ImGui::SliderFloat("##speed", &speed_, 0.25f, 4.0f, "%.2g steps/s");
        if (playing_) {
            if (ImGui::GetTime() - last_tick_ >= 1.0 / speed_) {
                last_tick_ = ImGui::GetTime();
                if (++sel_.substep > subs) {
                    sel_.substep = subs;
                    playing_ = false;
                }
            }
        }
    } else {
        sel_.substep = 0;
        playing_ = false;
    }
    picture(plan, View::Steps);
}

} // namespace shardscope::render
