// A Canvas that records what a picture draws, for asserting on it without GL.
#pragma once

#include "render/canvas.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::test {

struct RecordingCanvas final : render::Canvas {
    struct Fill {
        render::Rect rect;
        render::Color color;
    };
    struct Text {
        render::Vec2 pos;
        std::string text;
    };
    std::vector<Fill> fills;
    std::vector<Fill> strokes;        ///< stroked rectangles (their colour)
    std::vector<std::int64_t> hovers; ///< hover_device() calls
    std::vector<Text> texts;
    std::vector<std::pair<render::Rect, std::string>> tips;
    int lines = 0;
    void fill_rect(const render::Rect& r, render::Color c) override { fills.push_back({r, c}); }
    void stroke_rect(const render::Rect& r, render::Color c, float) override {
        strokes.push_back({r, c});
    }
    void hover_device(std::int64_t d) override { hovers.push_back(d); }
    /// hovered(): the rectangles that contain this point (the window's pointer).
    render::Vec2 pointer{-1e9f, -1e9f};
    bool hovered(const render::Rect& r) const override {
        return pointer.x >= r.x0 && pointer.x < r.x1 && pointer.y >= r.y0 && pointer.y < r.y1;
    }
    void line(render::Vec2, render::Vec2, render::Color, float) override { ++lines; }
    void text(render::Vec2 pos, render::Color, std::string_view s, float) override {
        texts.push_back({pos, std::string(s)});
    }
    render::Vec2 text_size(std::string_view s, float size) const override {
        return {render::mono_text_width(s, size), size};
    }
    bool wants_tip(const render::Rect&) const override { return true; }
    void tip(const render::Rect& r, std::string_view t) override {
        tips.push_back({r, std::string(t)});
    }
    bool has_text(const std::string& needle) const {
        for (const auto& t : texts)
            if (t.text.find(needle) != std::string::npos) return true;
        return false;
    }
};

} // namespace shardscope::test
