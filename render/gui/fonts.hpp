// Fonts of the window and the PNG pictures: DejaVu Sans (interface) and DejaVu Sans Mono
// (editor and pictures), with the glyphs the notation uses: subscripts and superscripts,
// Greek (φ, Σ), primes, arrows, math operators.
#pragma once

struct ImFont;

namespace shardscope::render {

struct Fonts {
    ImFont* ui = nullptr;
    ImFont* mono = nullptr;
    ImFont* ui_large = nullptr; ///< teaching mode
    ImFont* mono_large = nullptr;
    bool dejavu = false; ///< false: the DejaVu files were missing, ImGui's built-in font is used
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

} // namespace shardscope::render
