// The canvas the pictures are drawn on: one implementation over ImDrawList (the window and
// PNG), one writing SVG (headless). Pictures use one monospace font (DejaVu Sans Mono) so
// that text measures the same on both.
#pragma once

#include "render/geometry.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace shardscope::render {

class Canvas {
public:
    virtual ~Canvas() = default;
    virtual void fill_rect(const Rect& r, Color c) = 0;
    virtual void stroke_rect(const Rect& r, Color c, float thickness = 1) = 0;
    virtual void line(Vec2 a, Vec2 b, Color c, float thickness = 1) = 0;
    /// UTF-8 text with its top-left corner at `pos`, `size` pixels high.
    virtual void text(Vec2 pos, Color c, std::string_view s, float size) = 0;
    /// The extent `text` would cover.
    virtual Vec2 text_size(std::string_view s, float size) const = 0;
    /// 45-degree hatching over `r`, lines `spacing` apart (hatch_segments, drawn as lines).
    /// The window's canvas overrides it: a hundred long thin lines cost software GL more than
    /// the tiles they cross.
    virtual void hatch(const Rect& r, Color c, float spacing, float width);
    /// Whether a hover text for `r` would be shown now: in the window when the pointer is
    /// over it, in SVG always (as <title>), never in PNG. Lets pictures build texts lazily.
    virtual bool wants_tip(const Rect& r) const {
        (void)r;
        return false;
    }
    /// Whether hover texts can be read at all: in the window and in SVG, not in PNG. A
    /// picture says "hover ..." only where this holds.
    virtual bool shows_tips() const { return false; }
    /// The hover text of `r` (a tooltip in the window, <title> in SVG).
    virtual void tip(const Rect& r, std::string_view text) {
        (void)r;
        (void)text;
    }
    /// Whether the pointer is over `r` (the window only): pictures highlight what it points at.
    virtual bool hovered(const Rect& r) const {
        (void)r;
        return false;
    }
    /// The picture says which device the pointer is over (the mesh's cells): the window
    /// outlines that device's tiles in the tiling.
    virtual void hover_device(std::int64_t device) { (void)device; }
    /// Says that the picture cannot show what was asked (it draws the reason too): the window
    /// shows the picture as it is, headless output fails with the first reason.
    void report_problem(std::string_view what) {
        if (problem_.empty()) problem_ = what;
    }
    const std::string& problem() const { return problem_; }

private:
    std::string problem_;
};

/// Advance of one code point of DejaVu Sans Mono, in ems (1233/2048).
inline constexpr float kMonoAdvance = 0.602f;

/// Width estimate of monospace text: code points x advance.
float mono_text_width(std::string_view s, float size);
/// Text as XML character data or an attribute value (SVG, JUnit): the five entities, and a
/// space for each control character XML 1.0 forbids.
std::string xml_escape(std::string_view s);

} // namespace shardscope::render
