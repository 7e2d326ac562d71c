// The verify panel: the executor on the sim backend in a background thread (run by the app),
// its progress, and PASS/FAIL with the errors per statement.
#include "render/gui/view.hpp"

#include <imgui.h>

namespace shardscope::render {

void MainView::verify_panel(const ViewInput& in, ViewActions& out) {
    const VerifyState& v = *in.verify;
    if (v.running) ImGui::BeginDisabled();
    if (ImGui::Button("Verify on sim")) out.run_verify = true;
    if (v.running) ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::TextDisabled("every statement run on simulated ranks at small sizes and compared "
                        "with one device");
    if (v.running || v.finished) {
        const float frac =
            v.total ? static_cast<float>(v.done) / static_cast<float>(v.total) : 0.0f;
        const std::string label =
            std::to_string(v.done) + " / " + std::to_string(v.total) + " statements";
        ImGui::ProgressBar(v.running ? frac : 1.0f, {-1, 0}, label.c_str());
    }
    if (!v.setting.empty()) ImGui::TextDisabled("%s", v.setting.c_str());
    if (!v.error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(220, 40, 40, 255));
        ImGui::TextWrapped("%s", v.error.c_str());
        ImGui::PopStyleColor();
    }
    if (v.finished && v.error.empty()) {
        int passed = 0;
        for (const auto& r : v.rows)
            passed += r.pass;
        ImGui::Text("%d of %zu statements verified in %.2f s", passed, v.rows.size(), v.seconds);
    }
    if (v.rows.empty()) return;
    if (ImGui::BeginTable("runs", 4,
                          ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY |
                              ImGuiTableFlags_Resizable)) {
        ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed);
        ImGui::TableSetupColumn("line", ImGuiTableColumnFlags_WidthFixed);
        ImGui::TableSetupColumn("statement");
        ImGui::TableSetupColumn("errors");
        ImGui::TableHeadersRow();
        for (const auto& r : v.rows) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            if (r.pass)
                ImGui::TextColored({0.16f, 0.63f, 0.24f, 1}, "PASS");
            else
                ImGui::TextColored({0.86f, 0.16f, 0.16f, 1}, "FAIL");
            ImGui::TableNextColumn();
            ImGui::Text("%u", r.line);
            ImGui::TableNextColumn();
            ImGui::PushFont(fonts_.mono);
            ImGui::TextUnformatted(r.source.c_str());
            ImGui::PopFont();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(r.detail.c_str());
        }
        ImGui::EndTable();
    }
}

} // namespace shardscope::render
