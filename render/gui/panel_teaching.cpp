// Teaching mode's panel: the sample's comments as narration beside its statements; clicking
// a statement selects it in the other panels.
#include "render/gui/view.hpp"
#include "render/narration.hpp"

#include <imgui.h>

#include <algorithm>

namespace shardscope::render {

void MainView::teaching_panel(const ViewInput& in, ViewActions& out) {
    (void)out;
    const auto blocks = narration(*in.text);
    const auto& plan = *in.plan;
    ImGui::BeginChild("narration", {0, 0}, false);
    const float wrap = ImGui::GetContentRegionAvail().x;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        const auto& n = blocks[b];
        // The statement of the plan that starts in this block.
        int statement = -1;
        const auto lines =
            static_cast<std::uint32_t>(std::count(n.statement.begin(), n.statement.end(), '\n'));
        for (std::size_t i = 0; i < plan.statements.size(); ++i) {
            const auto l = plan.statements[i].range.line;
            if (n.line && l >= n.line && l <= n.line + lines) {
                statement = static_cast<int>(i);
                break;
            }
        }
        ImGui::PushID(static_cast<int>(b));
        if (!n.comment.empty()) {
            ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + wrap);
            ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(70, 70, 90, 255));
            ImGui::TextUnformatted(n.comment.c_str());
            ImGui::PopStyleColor();
            ImGui::PopTextWrapPos();
        }
        if (!n.statement.empty()) {
            ImGui::PushFont(fonts_.mono_large);
            const bool selected = statement >= 0 && statement == sel_.statement;
            // The quiz: a statement's `expect` lines give its collectives away until answered.
            std::string shown = n.statement;
            if (statement >= 0 && quiz_hidden(plan, statement)) {
                std::string masked;
                std::size_t from = 0;
                while (from < shown.size()) {
                    auto to = shown.find('\n', from);
                    if (to == std::string::npos) to = shown.size();
                    const std::string line = shown.substr(from, to - from);
                    const auto first = line.find_first_not_of(" \t");
                    masked += first != std::string::npos && line.compare(first, 6, "expect") == 0
                                  ? line.substr(0, first) + "expect ? (quiz)"
                                  : line;
                    if (to < shown.size()) masked += '\n';
                    from = to + 1;
                }
                shown = masked;
            }
            if (ImGui::Selectable(shown.c_str(), selected) && statement >= 0) {
                sel_.statement = statement;
                sel_.tensor.clear();
                sel_.step = 0;
                fit_selection(plan);
            }
            ImGui::PopFont();
        }
        ImGui::Separator();
        ImGui::PopID();
    }
    ImGui::EndChild();
}

} // namespace shardscope::render
