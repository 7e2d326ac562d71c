// The Canvas over an ImDrawList: the window's panels and the PNG pictures draw through it.
#pragma once

#include "render/canvas.hpp"

struct ImDrawList;
struct ImFont;

namespace shardscope::render {

class ImGuiCanvas final : public Canvas {
public:
    /// Draws into `list` with `font` (the monospace picture font). With `interactive`,
    /// hover() shows tooltips for the pointer (the window; not for offscreen pictures).
    ImGuiCanvas(ImDrawList* list, ImFont* font, bool interactive);
    void fill_rect(const Rect& r, Color c) override;
    void stroke_rect(const Rect& r, Color c, float thickness = 1) override;
    void line(Vec2 a, Vec2 b, Color c, float thickness = 1) override;
    void text(Vec2 pos, Color c, std::string_view s, float size) override;
    Vec2 text_size(std::string_view s, float size) const override;
    bool wants_tip(const Rect& r) const override;
    void tip(const Rect& r, std::string_view text) override;
    bool hovered(const Rect& r) const override;

private:
    ImDrawList* list_;
    ImFont* font_;
    bool interactive_;
};

} // namespace shardscope::render
