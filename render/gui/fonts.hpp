// Fonts of the window and the PNG pictures: DejaVu Sans (interface) and DejaVu Sans Mono
// (editor and pictures), with the glyphs the notation uses: subscripts and superscripts,
// Greek (φ, Σ), primes, arrows, math operators.
#pragma once

#include <cstdint>
#include <vector>

struct ImFont;

namespace shardscope::render {

/// 45-degree hatching painted into the font atlas, one tile per whole period in pixels: the
/// window hatches a partial tensor's grid with a few textured quads instead of a hundred long
/// anti-aliased lines (those cost llvmpipe about 3 ms a frame on a 32x32 tiling).
struct HatchTiles {
    static constexpr int kMinPeriod = 4, kMaxPeriod = 24;
    static constexpr float kWidth = 1.2f; ///< the line width painted (draw.hpp's default)
    /// The atlas's custom rectangle of each period from kMinPeriod, -1 where there is none.
    int rect[kMaxPeriod - kMinPeriod + 1] = {};
    /// A tile's side for `period`: whole periods, about 64 px, so that it repeats seamlessly.
    static int side(int period) { return period * (period >= 64 ? 1 : 64 / period); }
};

/// The coverage (0-255) of a `side` x `side` tile by the lines x + y = period/2 + k*period of
/// `width` pixels (pixel centres at +0.5, as ImGui draws lines), row by row. GL-free.
std::vector<std::uint8_t> hatch_tile_alpha(int period, int side, float width);

struct Fonts {
    ImFont* ui = nullptr;
    ImFont* mono = nullptr;
    ImFont* ui_large = nullptr; ///< teaching mode
    ImFont* mono_large = nullptr;
    bool dejavu = false; ///< false: the DejaVu files were missing, ImGui's built-in font is used
    HatchTiles hatch;
};

/// The ranges of code points loaded from the fonts (ImGui's zero-terminated pairs).
const unsigned short* notation_glyph_ranges();

/// The window's look: ImGui's light style with a transparent window background, so that the
/// white the frame is cleared to shows through (software GL pays for every pixel a quad covers:
/// a full-window background quad alone costs llvmpipe about 10 ms). Pictures then need no
/// background of their own.
void apply_style();

/// Adds the fonts to the current ImGui context's atlas (before its texture is built).
/// `size` is the interface size in pixels; the large fonts are 1.6 times that.
Fonts load_fonts(float size = 17.0f);

/// Paints `tiles` into the current atlas, once it is built and before its texture is made.
void paint_hatch_tiles(const HatchTiles& tiles);

} // namespace shardscope::render
