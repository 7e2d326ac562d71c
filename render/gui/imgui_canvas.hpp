// The Canvas over an ImDrawList: the window's panels and the PNG pictures draw through it.
// For software GL (render/README.md) it batches opaque fills into images, draws opaque
// horizontal and vertical lines as solid bars and hatches with atlas tiles.
#pragma once

#include "render/canvas.hpp"
#include "render/gui/fill_image.hpp"

#include <cstdint>
#include <vector>

struct ImDrawList;
struct ImFont;

namespace shardscope::render {

struct HatchTiles;

class ImGuiCanvas final : public Canvas {
public:
    /// Draws into `list` with `font` (the monospace picture font). With `interactive`,
    /// hover() shows tooltips for the pointer (the window; not for offscreen pictures).
    /// With `hatch` (the atlas's hatching tiles, Fonts::hatch) hatching is a few textured quads.
    ImGuiCanvas(ImDrawList* list, ImFont* font, bool interactive,
                const HatchTiles* hatch = nullptr);
    ~ImGuiCanvas() override;
    ImGuiCanvas(const ImGuiCanvas&) = delete;
    ImGuiCanvas& operator=(const ImGuiCanvas&) = delete;
    void fill_rect(const Rect& r, Color c) override;
    void stroke_rect(const Rect& r, Color c, float thickness = 1) override;
    void line(Vec2 a, Vec2 b, Color c, float thickness = 1) override;
    void text(Vec2 pos, Color c, std::string_view s, float size) override;
    Vec2 text_size(std::string_view s, float size) const override;
    void hatch(const Rect& r, Color c, float spacing, float width) override;
    bool wants_tip(const Rect& r) const override;
    bool shows_tips() const override { return interactive_; }
    void tip(const Rect& r, std::string_view text) override;
    bool hovered(const Rect& r) const override;
    void hover_device(std::int64_t device) override { hovered_device_ = device; }
    /// The device the picture said the pointer is over (-1: none).
    std::int64_t hovered_device() const { return hovered_device_; }

    /// Draws the opaque fills collected so far (fill_image.hpp): as one image when there are
    /// many, else as rectangles. Every other drawing call does this first, to keep the order.
    void flush_fills();

private:
    ImDrawList* list_;
    ImFont* font_;
    bool interactive_;
    const HatchTiles* hatch_;
    std::vector<PendingFill> fills_;
    std::int64_t hovered_device_ = -1;
};

} // namespace shardscope::render
