#include "render/gui/imgui_canvas.hpp"

#include <imgui.h>

#include <cfloat>
#include <string>

namespace shardscope::render {

namespace {
ImVec2 v(Vec2 p) {
    return {p.x, p.y};
}
} // namespace

ImGuiCanvas::ImGuiCanvas(ImDrawList* list, ImFont* font, bool interactive)
    : list_(list), font_(font), interactive_(interactive) {}

void ImGuiCanvas::fill_rect(const Rect& r, Color c) {
    list_->AddRectFilled({r.x0, r.y0}, {r.x1, r.y1}, c.abgr());
}

void ImGuiCanvas::stroke_rect(const Rect& r, Color c, float thickness) {
    list_->AddRect({r.x0, r.y0}, {r.x1, r.y1}, c.abgr(), 0.0f, 0, thickness);
}

void ImGuiCanvas::line(Vec2 a, Vec2 b, Color c, float thickness) {
    list_->AddLine(v(a), v(b), c.abgr(), thickness);
}

void ImGuiCanvas::text(Vec2 pos, Color c, std::string_view s, float size) {
    list_->AddText(font_, size, v(pos), c.abgr(), s.data(), s.data() + s.size());
}

Vec2 ImGuiCanvas::text_size(std::string_view s, float size) const {
    const ImVec2 e = font_->CalcTextSizeA(size, FLT_MAX, 0.0f, s.data(), s.data() + s.size());
    return {e.x, e.y};
}

bool ImGuiCanvas::hovered(const Rect& r) const {
    return interactive_ && ImGui::IsWindowHovered(ImGuiHoveredFlags_AllowWhenBlockedByPopup) &&
           ImGui::IsMouseHoveringRect({r.x0, r.y0}, {r.x1, r.y1}, false);
}

bool ImGuiCanvas::wants_tip(const Rect& r) const {
    return hovered(r);
}

void ImGuiCanvas::tip(const Rect& r, std::string_view text) {
    if (text.empty() || !hovered(r)) return;
    ImGui::BeginTooltip();
    ImGui::PushFont(font_);
    ImGui::TextUnformatted(text.data(), text.data() + text.size());
    ImGui::PopFont();
    ImGui::EndTooltip();
}

} // namespace shardscope::render
