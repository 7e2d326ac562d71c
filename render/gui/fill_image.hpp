// Many opaque rectangles as one image. A 32x32 tiling is 1024 small rectangles (a replicated
// one 32 stripes per tile), and llvmpipe pays per triangle: edge setup, binning, partly
// covered blocks. The ImGui canvas collects a picture's consecutive opaque fills and, when
// they are many and small, paints them into an image on the CPU (a few hundred thousand pixel
// writes) and draws that as one quad, one texel per whole pixel, sampled nearest: the same
// pixels for less work.
#pragma once

#include "render/geometry.hpp"

#include <cstdint>
#include <vector>

namespace shardscope::render {

/// An opaque rectangle to paint, colour in ImGui's packed layout (Color::abgr()).
struct PendingFill {
    Rect r;
    std::uint32_t abgr = 0;
};

/// Pixels [x0, x0+w) x [y0, y0+h), row by row, RGBA bytes in memory (ImGui's packed colour
/// on a little-endian machine); alpha 0 where no rectangle covers a pixel.
struct FillImage {
    int x0 = 0, y0 = 0, w = 0, h = 0;
    std::vector<std::uint32_t> px;
};

/// Paints `fills` in order, each on the pixels whose centres it covers (GL's rule for an
/// axis-aligned rectangle), within `clip`. Empty (w or h 0) when nothing is covered. GL-free.
FillImage paint_fills(const std::vector<PendingFill>& fills, const Rect& clip);

/// `image` uploaded into a texture of the current ImGui context (nearest sampling), reused
/// from frame to frame; nullptr without a current GL context. The texture stays valid until
/// this ImGui context's next frame.
void* frame_texture(const FillImage& image);

} // namespace shardscope::render
