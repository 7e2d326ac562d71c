// A canvas that writes SVG 1.1 (no GL, no display).
#pragma once

#include "render/canvas.hpp"

#include <sstream>
#include <string>

namespace shardscope::render {

class SvgCanvas final : public Canvas {
public:
    SvgCanvas(float width, float height, Color background = {255, 255, 255, 255});
    void fill_rect(const Rect& r, Color c) override;
    void stroke_rect(const Rect& r, Color c, float thickness = 1) override;
    void line(Vec2 a, Vec2 b, Color c, float thickness = 1) override;
    void text(Vec2 pos, Color c, std::string_view s, float size) override;
    Vec2 text_size(std::string_view s, float size) const override;
    bool wants_tip(const Rect&) const override { return true; }
    bool shows_tips() const override { return true; }
    void tip(const Rect& r, std::string_view text) override;
    /// The whole document (tight: its size and viewBox are what was drawn, background and
    /// hover areas aside, with a margin of 8).
    std::string str() const;
    void set_tight(bool tight) { tight_ = tight; }
    /// The elements drawn so far (the background first), without the document around them.
    std::string body() const { return body_.str(); }
    /// The extent of what was drawn (background and hover areas aside); false when nothing.
    bool ink_box(Rect& box) const {
        box = ink_;
        return have_ink_;
    }
    /// The document around `body` (as str() writes it): its size and viewBox `box`.
    static std::string document(const Rect& box, const std::string& body);

private:
    void ink(const Rect& r);
    float width_, height_;
    std::ostringstream body_;
    bool tight_ = false, drawn_ = false, have_ink_ = false;
    Rect ink_{};
};

/// `s` with &, <, >, " escaped for XML.
std::string xml_escape(std::string_view s);

} // namespace shardscope::render
