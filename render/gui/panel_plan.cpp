// The plan panel: the selected statement's steps as a timeline (lengths proportional to the
// estimated time), with bytes and reasons, and the alternatives with their cost.
#include "render/gui/view.hpp"

#include <imgui.h>

#include <algorithm>

namespace shardscope::render {

void MainView::plan_panel(const ViewInput& in) {
    const auto& plan = *in.plan;
    if (plan.statements.empty()) {
        ImGui::TextDisabled("no statement");
        return;
    }
    if (quiz_hidden(plan, sel_.statement)) {
        ImGui::TextDisabled("(quiz: the plan is hidden until you answer)");
        return;
    }
    ImGui::BeginChild("plan", {0, 0}, false);
    const float scale = font_size() / 14.0f;
    const float h =
        std::max(ImGui::GetContentRegionAvail().y, picture_size(plan, View::Plan, sel_).y * scale);
    picture(plan, View::Plan, h);
    ImGui::EndChild();
}

} // namespace shardscope::render
