#include "render/canvas.hpp"
#include "render/draw.hpp"
#include "render/svg_canvas.hpp"

#include <algorithm>

#include <cmath>
#include <cstdio>

namespace shardscope::render {

std::string Color::hex() const {
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", r, g, b);
    return buf;
}

Color mix(Color a, Color b, float t) {
    t = std::clamp(t, 0.0f, 1.0f);
    auto m = [t](std::uint8_t x, std::uint8_t y) {
        return static_cast<std::uint8_t>(std::lround(x + (y - x) * t));
    };
    return {m(a.r, b.r), m(a.g, b.g), m(a.b, b.b), 255};
}

void Canvas::hatch(const Rect& r, Color c, float spacing, float width) {
    for (const auto& [a, b] : hatch_segments(r, spacing))
        line(a, b, c, width);
}

float mono_text_width(std::string_view s, float size) {
    std::size_t n = 0;
    for (unsigned char ch : s)
        if ((ch & 0xC0) != 0x80) ++n;
    return static_cast<float>(n) * kMonoAdvance * size;
}

std::string xml_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (unsigned char ch : s) {
        switch (ch) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&quot;";
            break;
        case '\'':
            out += "&apos;";
            break;
        default:
            // XML 1.0 forbids most control characters, even escaped.
            if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
                out += ' ';
            else
                out += static_cast<char>(ch);
        }
    }
    return out;
}

namespace {

/// Numbers with at most two decimals, no trailing zeros.
std::string num(float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(v));
    std::string s = buf;
    while (!s.empty() && s.back() == '0')
        s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    if (s == "-0") s = "0";
    return s;
}

std::string opacity(Color c) {
    if (c.a == 255) return "";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", c.a / 255.0);
    return buf;
}

} // namespace

SvgCanvas::SvgCanvas(float width, float height, Color background) : width_(width), height_(height) {
    fill_rect({0, 0, width, height}, background);
    drawn_ = true; // what follows is the picture
}

void SvgCanvas::ink(const Rect& r) {
    if (!drawn_) return;
    if (!have_ink_) {
        ink_ = r;
        have_ink_ = true;
        return;
    }
    ink_.x0 = std::min(ink_.x0, r.x0);
    ink_.y0 = std::min(ink_.y0, r.y0);
    ink_.x1 = std::max(ink_.x1, r.x1);
    ink_.y1 = std::max(ink_.y1, r.y1);
}

void SvgCanvas::fill_rect(const Rect& r, Color c) {
    ink(r);
    body_ << "<rect x=\"" << num(r.x0) << "\" y=\"" << num(r.y0) << "\" width=\"" << num(r.width())
          << "\" height=\"" << num(r.height()) << "\" fill=\"" << c.hex() << "\"";
    if (c.a != 255) body_ << " fill-opacity=\"" << opacity(c) << "\"";
    body_ << "/>\n";
}

void SvgCanvas::stroke_rect(const Rect& r, Color c, float thickness) {
    ink({r.x0 - thickness / 2, r.y0 - thickness / 2, r.x1 + thickness / 2, r.y1 + thickness / 2});
    body_ << "<rect x=\"" << num(r.x0) << "\" y=\"" << num(r.y0) << "\" width=\"" << num(r.width())
          << "\" height=\"" << num(r.height()) << "\" fill=\"none\" stroke=\"" << c.hex()
          << "\" stroke-width=\"" << num(thickness) << "\"";
    if (c.a != 255) body_ << " stroke-opacity=\"" << opacity(c) << "\"";
    body_ << "/>\n";
}

void SvgCanvas::line(Vec2 a, Vec2 b, Color c, float thickness) {
    ink({std::min(a.x, b.x) - thickness / 2, std::min(a.y, b.y) - thickness / 2,
         std::max(a.x, b.x) + thickness / 2, std::max(a.y, b.y) + thickness / 2});
    body_ << "<line x1=\"" << num(a.x) << "\" y1=\"" << num(a.y) << "\" x2=\"" << num(b.x)
          << "\" y2=\"" << num(b.y) << "\" stroke=\"" << c.hex() << "\" stroke-width=\""
          << num(thickness) << "\"";
    if (c.a != 255) body_ << " stroke-opacity=\"" << opacity(c) << "\"";
    body_ << "/>\n";
}

void SvgCanvas::text(Vec2 pos, Color c, std::string_view s, float size) {
    const Vec2 e = text_size(s, size);
    ink({pos.x, pos.y, pos.x + e.x, pos.y + e.y});
    // SVG places text by its baseline: DejaVu's ascent is about 0.76 em (ImGui's top-left).
    body_ << "<text x=\"" << num(pos.x) << "\" y=\"" << num(pos.y + 0.76f * size)
          << "\" font-size=\"" << num(size) << "\" fill=\"" << c.hex() << "\"";
    if (c.a != 255) body_ << " fill-opacity=\"" << opacity(c) << "\"";
    body_ << ">" << xml_escape(s) << "</text>\n";
}

Vec2 SvgCanvas::text_size(std::string_view s, float size) const {
    return {mono_text_width(s, size), size};
}

void SvgCanvas::tip(const Rect& r, std::string_view tip) {
    body_ << "<rect x=\"" << num(r.x0) << "\" y=\"" << num(r.y0) << "\" width=\"" << num(r.width())
          << "\" height=\"" << num(r.height()) << "\" fill=\"none\" pointer-events=\"all\"><title>"
          << xml_escape(tip) << "</title></rect>\n";
}

std::string SvgCanvas::document(const Rect& box, const std::string& body) {
    std::ostringstream out;
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(box.width())
        << "\" height=\"" << num(box.height()) << "\" viewBox=\"" << num(box.x0) << " "
        << num(box.y0) << " " << num(box.width()) << " " << num(box.height()) << "\" "
        << "font-family=\"DejaVu Sans Mono, monospace\">\n"
        << body << "</svg>\n";
    return out.str();
}

std::string SvgCanvas::str() const {
    Rect box{0, 0, width_, height_};
    if (tight_ && have_ink_)
        box = {std::max(0.0f, ink_.x0 - 8), std::max(0.0f, ink_.y0 - 8),
               std::min(width_, ink_.x1 + 8), std::min(height_, ink_.y1 + 8)};
    return document(box, body_.str());
}

} // namespace shardscope::render
