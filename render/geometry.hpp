// Plain geometry and colour values shared by the canvases and the views (no GL).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

namespace shardscope::render {

struct Vec2 {
    float x = 0, y = 0;
    friend Vec2 operator+(Vec2 a, Vec2 b) { return {a.x + b.x, a.y + b.y}; }
    friend Vec2 operator-(Vec2 a, Vec2 b) { return {a.x - b.x, a.y - b.y}; }
    bool operator==(const Vec2&) const = default;
};

/// An axis-aligned rectangle [x0, x1) x [y0, y1), y down.
struct Rect {
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    float width() const { return x1 - x0; }
    float height() const { return y1 - y0; }
    Vec2 min() const { return {x0, y0}; }
    Vec2 max() const { return {x1, y1}; }
    Vec2 center() const { return {(x0 + x1) / 2, (y0 + y1) / 2}; }
    bool contains(Vec2 p) const { return p.x >= x0 && p.x < x1 && p.y >= y0 && p.y < y1; }
    bool operator==(const Rect&) const = default;
};

/// 8-bit sRGB with alpha.
struct Color {
    std::uint8_t r = 0, g = 0, b = 0, a = 255;
    bool operator==(const Color&) const = default;
    auto operator<=>(const Color&) const = default;
    /// ImGui's packed IM_COL32 layout (A in the high byte, R in the low one).
    std::uint32_t abgr() const {
        return static_cast<std::uint32_t>(a) << 24 | static_cast<std::uint32_t>(b) << 16 |
               static_cast<std::uint32_t>(g) << 8 | r;
    }
    /// "#rrggbb".
    std::string hex() const;
    Color with_alpha(std::uint8_t alpha) const { return {r, g, b, alpha}; }
};

/// Blend `a` towards `b` by t in [0, 1] (opaque result).
Color mix(Color a, Color b, float t);

} // namespace shardscope::render
