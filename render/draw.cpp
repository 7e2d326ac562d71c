#include "render/draw.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace shardscope::render {

std::vector<std::pair<Vec2, Vec2>> hatch_segments(const Rect& r, float spacing) {
    std::vector<std::pair<Vec2, Vec2>> out;
    if (spacing <= 0 || r.width() <= 0 || r.height() <= 0) return out;
    // Lines x - y = k (going down-right... drawn as x + y = k: up-right), for k over the box.
    const float w = r.width(), h = r.height();
    for (float k = spacing / 2; k < w + h; k += spacing) {
        // Points on x + y = k (local coordinates) inside [0,w] x [0,h].
        const float xa = std::max(0.0f, k - h), xb = std::min(w, k);
        if (xb <= xa) continue;
        out.push_back({{r.x0 + xa, r.y0 + (k - xa)}, {r.x0 + xb, r.y0 + (k - xb)}});
    }
    return out;
}

namespace {

/// Byte offsets of code point starts in `s`, plus s.size().
std::vector<std::size_t> code_points(std::string_view s) {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < s.size(); ++i)
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) out.push_back(i);
    out.push_back(s.size());
    return out;
}

} // namespace

std::string elide(const Canvas& c, std::string_view s, float size, float max_width) {
    if (max_width <= 0 || c.text_size(s, size).x <= max_width) return std::string(s);
    const auto cps = code_points(s);
    // Longest prefix that fits with the ellipsis.
    std::size_t lo = 0, hi = cps.size() - 1;
    while (lo < hi) {
        const std::size_t mid = (lo + hi + 1) / 2;
        std::string t(s.substr(0, cps[mid]));
        t += "…";
        if (c.text_size(t, size).x <= max_width)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (lo == 0) return "";
    return std::string(s.substr(0, cps[lo])) + "…";
}

float text_clipped(Canvas& c, Vec2 pos, Color color, std::string_view s, float size,
                   float max_width) {
    const std::string t = elide(c, s, size, max_width);
    if (t.empty()) return 0;
    c.text(pos, color, t, size);
    return c.text_size(t, size).x;
}

void text_centered(Canvas& c, const Rect& r, std::string_view s, Color color, float size) {
    float sz = size;
    const float w = r.width() - 4;
    if (w <= 0 || r.height() < size * 0.5f) return;
    while (sz > size / 2 && c.text_size(s, sz).x > w)
        sz *= 0.9f;
    sz = std::min(sz, r.height());
    const std::string t = elide(c, s, sz, w);
    if (t.empty()) return;
    const Vec2 ext = c.text_size(t, sz);
    c.text({r.center().x - ext.x / 2, r.center().y - ext.y / 2}, color, t, sz);
}

void arrow(Canvas& c, Vec2 a, Vec2 b, Color color, float thickness) {
    c.line(a, b, color, thickness);
    const float dx = b.x - a.x, dy = b.y - a.y;
    const float len = std::sqrt(dx * dx + dy * dy);
    if (len <= 0) return;
    const float ux = dx / len, uy = dy / len, s = 6 + thickness * 2;
    c.line(b, {b.x - s * ux + s * 0.5f * uy, b.y - s * uy - s * 0.5f * ux}, color, thickness);
    c.line(b, {b.x - s * ux - s * 0.5f * uy, b.y - s * uy + s * 0.5f * ux}, color, thickness);
}

} // namespace shardscope::render
