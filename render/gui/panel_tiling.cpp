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
    picture(*in.plan, View::Tiling);
}

} // namespace shardscope::render
