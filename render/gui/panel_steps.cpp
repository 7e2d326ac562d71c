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
    picture(plan, View::Steps);
}

} // namespace shardscope::render
