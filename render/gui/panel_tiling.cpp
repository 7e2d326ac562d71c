// The tiling panel: the selected tensor cut into tiles coloured by their holders.
#include "render/gui/view.hpp"

#include <imgui.h>

namespace shardscope::render {

void MainView::tiling_panel(const ViewInput& in) {
    if (in.stale) ImGui::TextDisabled("(the text has syntax errors: the last plan that checked)");
    if (in.plan->statements.empty()) {
        ImGui::TextDisabled("no statement to draw");
        return;
    }
    // Zoom and pan: the wheel over the tiling zooms about the pointer, a drag pans.
    if (zoom_ != 1 || pan_.x != 0 || pan_.y != 0) {
        ImGui::TextDisabled("zoom %.3g×", static_cast<double>(zoom_));
        ImGui::SameLine();
        if (ImGui::SmallButton("reset view")) {
            zoom_ = 1;
            pan_ = {0, 0};
        }
    } else {
        ImGui::TextDisabled("wheel: zoom · drag: pan");
    }
    picture(*in.plan, View::Tiling);
}

} // namespace shardscope::render
