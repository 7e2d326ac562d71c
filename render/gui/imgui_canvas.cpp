#include "render/gui/imgui_canvas.hpp"

#include "render/gui/fonts.hpp"
#include "render/gui/solid_fill.hpp"

#include <imgui.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

namespace shardscope::render {

namespace {
ImVec2 v(Vec2 p) {
    return {p.x, p.y};
}

/// `r` on whole pixels, at least one pixel across either way.
Rect snap(const Rect& r) {
    Rect s{std::round(r.x0), std::round(r.y0), std::round(r.x1), std::round(r.y1)};
    s.x1 = std::max(s.x1, s.x0 + 1);
    s.y1 = std::max(s.y1, s.y0 + 1);
    return s;
}
} // namespace

ImGuiCanvas::ImGuiCanvas(ImDrawList* list, ImFont* font, bool interactive, const HatchTiles* hatch)
    : list_(list), font_(font), interactive_(interactive), hatch_(hatch) {}

ImGuiCanvas::~ImGuiCanvas() {
    flush_fills();
}

/// Fewer fills than this are drawn as rectangles: an image costs a texture upload.
constexpr std::size_t kMinImageFills = 64;
/// Fills larger than this on average are drawn as rectangles too: llvmpipe fills those in
/// parallel faster than this thread paints them; the image pays off for many tiny ones.
constexpr double kMaxImageFillArea = 160;

void ImGuiCanvas::fill_rect(const Rect& r, Color c) {
    if (c.a == 255 && fast_paths()) {
        fills_.push_back({r, c.abgr()});
        return;
    }
    flush_fills();
    list_->AddRectFilled({r.x0, r.y0}, {r.x1, r.y1}, c.abgr());
}

void ImGuiCanvas::flush_fills() {
    if (fills_.empty()) return;
    void* texture = nullptr;
    FillImage img;
    double area = 0;
    for (const auto& f : fills_)
        area += static_cast<double>(f.r.width()) * static_cast<double>(f.r.height());
    if (fills_.size() >= kMinImageFills &&
        area <= kMaxImageFillArea * static_cast<double>(fills_.size())) {
        const ImVec2 lo = list_->GetClipRectMin(), hi = list_->GetClipRectMax();
        img = paint_fills(fills_, {lo.x, lo.y, hi.x, hi.y});
        texture = frame_texture(img);
    }
    if (texture) {
        const float x0 = static_cast<float>(img.x0), y0 = static_cast<float>(img.y0);
        list_->AddImage(texture, {x0, y0},
                        {x0 + static_cast<float>(img.w), y0 + static_cast<float>(img.h)});
    } else {
        for (const auto& f : fills_)
            list_->AddRectFilled({f.r.x0, f.r.y0}, {f.r.x1, f.r.y1}, f.abgr);
    }
    fills_.clear();
}

void ImGuiCanvas::stroke_rect(const Rect& r, Color c, float thickness) {
    flush_fills();
    if (c.a != 255 || !fast_paths()) {
        list_->AddRect({r.x0, r.y0}, {r.x1, r.y1}, c.abgr(), 0.0f, 0, thickness);
        return;
    }
    // Four solid bars where ImGui would stroke the path r.min+0.5 .. r.max-0.5: see line().
    const Rect out = snap({r.x0 + 0.5f - thickness / 2, r.y0 + 0.5f - thickness / 2,
                           r.x1 - 0.5f + thickness / 2, r.y1 - 0.5f + thickness / 2});
    const float t = std::max(1.0f, std::round(thickness));
    if (out.width() <= 2 * t || out.height() <= 2 * t) {
        list_->AddRectFilled({out.x0, out.y0}, {out.x1, out.y1}, c.abgr());
        return;
    }
    const ImU32 col = c.abgr();
    list_->AddRectFilled({out.x0, out.y0}, {out.x1, out.y0 + t}, col);
    list_->AddRectFilled({out.x0, out.y1 - t}, {out.x1, out.y1}, col);
    list_->AddRectFilled({out.x0, out.y0 + t}, {out.x0 + t, out.y1 - t}, col);
    list_->AddRectFilled({out.x1 - t, out.y0 + t}, {out.x1, out.y1 - t}, col);
}

void ImGuiCanvas::line(Vec2 a, Vec2 b, Color c, float thickness) {
    flush_fills();
    // Opaque horizontal and vertical lines (the tiles' cuts, outlines) as solid rectangles on
    // whole pixels: ImGui draws a line as an anti-aliased, textured quad wider than the line,
    // which software GL blends pixel by pixel; a solid rectangle it fills without the atlas
    // (render_draw_data). ImGui centres a line on the pixel centres (p + 0.5).
    if (c.a == 255 && (a.x == b.x || a.y == b.y) && fast_paths()) {
        const float h = thickness / 2;
        const Rect r =
            a.x == b.x
                ? Rect{a.x + 0.5f - h, std::min(a.y, b.y), a.x + 0.5f + h, std::max(a.y, b.y)}
                : Rect{std::min(a.x, b.x), a.y + 0.5f - h, std::max(a.x, b.x), a.y + 0.5f + h};
        const Rect s = snap(r);
        list_->AddRectFilled({s.x0, s.y0}, {s.x1, s.y1}, c.abgr());
        return;
    }
    list_->AddLine(v(a), v(b), c.abgr(), thickness);
}

void ImGuiCanvas::text(Vec2 pos, Color c, std::string_view s, float size) {
    flush_fills();
    list_->AddText(font_, size, v(pos), c.abgr(), s.data(), s.data() + s.size());
    // The picture's text in ImGui's log too (the window's --script dump:FILE), one line each.
    ImGui::LogText("%.*s\n", static_cast<int>(s.size()), s.data());
}

void ImGuiCanvas::hatch(const Rect& r, Color c, float spacing, float width) {
    flush_fills();
    const int period = static_cast<int>(std::lround(spacing));
    ImFontAtlas* atlas = ImGui::GetIO().Fonts;
    const ImFontAtlasCustomRect* tile = nullptr;
    if (hatch_ && fast_paths() && width == HatchTiles::kWidth && period >= HatchTiles::kMinPeriod &&
        period <= HatchTiles::kMaxPeriod) {
        const int id = hatch_->rect[period - HatchTiles::kMinPeriod];
        tile = id >= 0 ? atlas->GetCustomRectByIndex(id) : nullptr;
    }
    if (!tile || !tile->IsPacked()) {
        Canvas::hatch(r, c, spacing, width);
        return;
    }
    // Whole pixels, so that every pixel samples one texel of the tile.
    const Rect s = snap(r);
    const float side = static_cast<float>(HatchTiles::side(period));
    ImVec2 uv0, uv1;
    atlas->CalcCustomRectUV(tile, &uv0, &uv1);
    const int nx = static_cast<int>(std::ceil(s.width() / side));
    const int ny = static_cast<int>(std::ceil(s.height() / side));
    begin_nearest_sampling(*list_);
    list_->PrimReserve(6 * nx * ny, 4 * nx * ny);
    for (int j = 0; j < ny; ++j)
        for (int i = 0; i < nx; ++i) {
            const float x0 = s.x0 + static_cast<float>(i) * side;
            const float y0 = s.y0 + static_cast<float>(j) * side;
            const float x1 = std::min(x0 + side, s.x1), y1 = std::min(y0 + side, s.y1);
            const ImVec2 uv_max{uv0.x + (uv1.x - uv0.x) * (x1 - x0) / side,
                                uv0.y + (uv1.y - uv0.y) * (y1 - y0) / side};
            list_->PrimRectUV({x0, y0}, {x1, y1}, uv0, uv_max, c.abgr());
        }
    end_nearest_sampling(*list_);
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
