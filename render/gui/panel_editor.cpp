// The editor panel: the program text, re-checked by the app on every edit; diagnostics
// underlined at their ranges and listed below with their fixes. The cursor's statement is
// selected in the other panels.
#include "render/gui/view.hpp"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace shardscope::render {

namespace {

int cursor_callback(ImGuiInputTextCallbackData* data) {
    auto* line = static_cast<int*>(data->UserData);
    int l = 1;
    for (int i = 0; i < data->CursorPos && i < data->BufTextLen; ++i)
        if (data->Buf[i] == '\n') ++l;
    *line = l;
    return 0;
}

ImU32 severity_color(Severity s) {
    switch (s) {
    case Severity::Error:
        return IM_COL32(220, 40, 40, 255);
    case Severity::Warning:
        return IM_COL32(230, 160, 20, 255);
    case Severity::Note:
        return IM_COL32(60, 120, 220, 255);
    }
    return IM_COL32(220, 40, 40, 255);
}

/// A wavy line under [x0, x1) at y.
void squiggle(ImDrawList* dl, float x0, float x1, float y, ImU32 col) {
    const float step = 3;
    ImVec2 prev{x0, y};
    bool up = true;
    for (float x = x0 + step; x < x1 + step; x += step) {
        const ImVec2 p{std::min(x, x1), y + (up ? -1.5f : 1.5f)};
        dl->AddLine(prev, p, col, 1.2f);
        prev = p;
        up = !up;
    }
}

} // namespace

void MainView::editor_panel(const ViewInput& in, ViewActions& out) {
    std::string& text = *in.text;
    const auto& diags = *in.diagnostics;
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float list_h =
        std::clamp(avail.y * 0.3f, ImGui::GetFontSize() * 3, ImGui::GetFontSize() * 16);
    ImGui::BeginChild("editor", {0, avail.y - list_h}, false, ImGuiWindowFlags_HorizontalScrollbar);
    ImGui::PushFont(fonts_.mono);
    // Sized to the whole text, so that the outer child scrolls and the text origin is known.
    int lines = 1;
    std::size_t longest = 0, cur = 0;
    for (std::size_t i = 0; i <= text.size(); ++i) {
        if (i == text.size() || text[i] == '\n') {
            longest = std::max(longest, cur);
            cur = 0;
            if (i < text.size()) ++lines;
        } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
            ++cur;
        }
    }
    const ImGuiStyle& style = ImGui::GetStyle();
    const float fs = ImGui::GetFontSize();
    const float adv = fonts_.mono->CalcTextSizeA(fs, FLT_MAX, 0, "M").x;
    const ImVec2 inner = ImGui::GetContentRegionAvail();
    const ImVec2 size{
        std::max(inner.x, static_cast<float>(longest + 4) * adv + style.FramePadding.x * 2),
        std::max(inner.y, static_cast<float>(lines + 2) * fs + style.FramePadding.y * 2)};
    // No frame fill (the white clear shows through; see apply_style).
    ImGui::PushStyleColor(ImGuiCol_FrameBg, IM_COL32(0, 0, 0, 0));
    const bool edited = ImGui::InputTextMultiline("##program", &text, size,
                                                  ImGuiInputTextFlags_AllowTabInput |
                                                      ImGuiInputTextFlags_CallbackAlways,
                                                  cursor_callback, &cursor_line_);
    ImGui::PopStyleColor();
    if (edited) out.text_changed = true;
    const ImVec2 origin{ImGui::GetItemRectMin().x + style.FramePadding.x,
                        ImGui::GetItemRectMin().y + style.FramePadding.y};
    // Underlines over the text (the input draws in a child window: use the foreground list,
    // clipped to this panel).
    ImDrawList* dl = ImGui::GetForegroundDrawList();
    const ImVec2 clip0 = ImGui::GetWindowPos();
    const ImVec2 clip1{clip0.x + ImGui::GetWindowWidth(), clip0.y + ImGui::GetWindowHeight()};
    dl->PushClipRect(clip0, clip1, true);
    const std::string* tip = nullptr;
    for (const auto& d : diags) {
        if (d.range.line == 0) continue;
        const int l0 = static_cast<int>(d.range.line);
        const int l1 = std::max(l0, static_cast<int>(d.range.end_line));
        for (int l = l0; l <= l1; ++l) {
            const float c0 = l == l0 ? static_cast<float>(d.range.column - 1) : 0;
            float c1 = l == l1 && d.range.end_column > 0
                           ? static_cast<float>(d.range.end_column - 1)
                           : static_cast<float>(longest);
            if (c1 <= c0) c1 = c0 + 1;
            const float y = origin.y + static_cast<float>(l) * fs;
            const float x0 = origin.x + c0 * adv, x1 = origin.x + c1 * adv;
            squiggle(dl, x0, x1, y - 1, severity_color(d.severity));
            if (ImGui::IsMouseHoveringRect({x0, y - fs}, {x1, y + 2})) tip = &d.message;
        }
    }
    dl->PopClipRect();
    if (tip && ImGui::IsWindowHovered(ImGuiHoveredFlags_ChildWindows))
        ImGui::SetTooltip("%s", tip->c_str());
    ImGui::PopFont();
    ImGui::EndChild();

    // The cursor's statement becomes the selection when the cursor moves to another line.
    if (cursor_line_ != follow_line_ && in.plan && !in.stale) {
        follow_line_ = cursor_line_;
        const auto& st = in.plan->statements;
        for (std::size_t i = 0; i < st.size(); ++i) {
            const auto& r = st[i].range;
            if (static_cast<int>(r.line) <= cursor_line_ &&
                cursor_line_ <= static_cast<int>(std::max(r.line, r.end_line))) {
                if (sel_.statement != static_cast<int>(i)) {
                    sel_.statement = static_cast<int>(i);
                    sel_.tensor.clear();
                    sel_.step = 0;
                    fit_selection(*in.plan);
                }
                break;
            }
        }
    }

    // The diagnostics, with their fixes.
    ImGui::Separator();
    ImGui::BeginChild("diagnostics", {0, 0}, false);
    if (diags.empty()) ImGui::TextDisabled("no diagnostics");
    ImGui::PushFont(fonts_.mono);
    for (const auto& d : diags) {
        ImGui::PushStyleColor(ImGuiCol_Text, severity_color(d.severity));
        ImGui::Text("%s %s", severity_name(d.severity), d.code.c_str());
        ImGui::PopStyleColor();
        ImGui::SameLine();
        if (d.range.line)
            ImGui::TextDisabled("%u:%u", d.range.line, d.range.column);
        else
            ImGui::TextDisabled("-");
        ImGui::SameLine();
        ImGui::TextWrapped("%s", d.message.c_str());
        if (!d.fix.empty()) {
            ImGui::Indent();
            ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(40, 150, 70, 255));
            ImGui::TextWrapped("fix: %s", d.fix.c_str());
            ImGui::PopStyleColor();
            ImGui::Unindent();
        }
    }
    ImGui::PopFont();
    ImGui::EndChild();
}

} // namespace shardscope::render
