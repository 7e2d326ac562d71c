// Small drawing helpers over a Canvas, shared by every picture.
#pragma once

#include "render/canvas.hpp"

#include <string_view>
#include <utility>
#include <vector>

namespace shardscope::render {

/// The segments of 45-degree hatching lines `spacing` apart, clipped to `r` (for partial
/// tensors). Pure geometry, so that it can be tested without a canvas.
std::vector<std::pair<Vec2, Vec2>> hatch_segments(const Rect& r, float spacing);

inline void hatch(Canvas& c, const Rect& r, Color color, float spacing = 8, float width = 1.2f) {
    c.hatch(r, color, spacing, width);
}

/// Text centred in `r`, shrunk (down to half size) or elided with "…" to fit its width.
void text_centered(Canvas& c, const Rect& r, std::string_view s, Color color, float size);

/// Text left-aligned at `pos`, elided with "…" past `max_width` (<= 0: no limit). Returns the
/// width drawn.
float text_clipped(Canvas& c, Vec2 pos, Color color, std::string_view s, float size,
                   float max_width);

/// `s` cut to at most `max_width` when drawn at `size`, with "…" when cut.
std::string elide(const Canvas& c, std::string_view s, float size, float max_width);

/// A filled rectangle with an outline.
inline void box(Canvas& c, const Rect& r, Color fill, Color outline, float thickness = 1) {
    c.fill_rect(r, fill);
    c.stroke_rect(r, outline, thickness);
}

/// A horizontal arrow from `a` to `b` with a small head.
void arrow(Canvas& c, Vec2 a, Vec2 b, Color color, float thickness = 1.5f);

} // namespace shardscope::render
