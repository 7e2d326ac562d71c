// The mesh panel: the devices as a grid; hovering one lists what it holds of every tensor.
#include "render/gui/view.hpp"

#include <imgui.h>

namespace shardscope::render {

void MainView::mesh_panel(const ViewInput& in) {
    if (quiz_hidden(*in.plan, sel_.statement)) {
        ImGui::TextDisabled("(quiz: what each device holds is hidden until you answer)");
        return;
    }
    picture(*in.plan, View::Mesh);
}

} // namespace shardscope::render
