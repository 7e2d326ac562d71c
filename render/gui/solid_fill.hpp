// Solid fills without the font atlas. ImGui draws everything with one program that samples
// the font atlas and blends, even a plain rectangle (its UVs all point at the atlas's white
// pixel). Mesa's software GL pays for that per pixel, and the tiles, mesh cells and window
// frames are most of the pixels a frame covers. render_draw_data() splits each draw list's
// commands so that large runs of such solid triangles are drawn by an untextured program,
// without blending and with a flat colour where a triangle is one opaque colour. The picture stays
// the same: the white pixel samples as exactly 1.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <vector>

namespace shardscope::render {

/// How a run of triangles is drawn.
enum class FillKind : std::uint8_t {
    Textured,     ///< ImGui's program (text, anti-aliased lines, images)
    SolidBlended, ///< untextured, blended (translucent colours, anti-aliased fringes)
    SolidOpaque,  ///< untextured, no blending, one flat colour: every vertex the same, opaque
};

/// A run of consecutive indices of one draw command, all drawn one way.
struct FillRun {
    FillKind kind = FillKind::Textured;
    unsigned first = 0; ///< index offset, relative to the command's IdxOffset
    unsigned count = 0; ///< indices (a multiple of 3)
    float pixels = 0;   ///< the area its triangles cover (overlaps counted again)
};

/// Solid runs covering fewer pixels than this stay with ImGui's program: switching programs
/// costs more than sampling a few pixels.
inline constexpr float kMinSolidRunPixels = 4096;

/// The runs of one command's triangles (`idx[0..count)` indexing `vtx`): a triangle is solid
/// when its three vertices sit on `white_uv`, opaque when they have one colour, alpha 255. Solid
/// runs smaller than `min_pixels` merge into their textured neighbours. GL-free, for tests.
std::vector<FillRun> fill_runs(const ImDrawVert* vtx, const ImDrawIdx* idx, unsigned count,
                               float white_u, float white_v, float min_pixels = kMinSolidRunPixels);

/// Rewrites `list`'s commands: solid runs become draw commands wrapped in callbacks that
/// switch to the untextured program and back (ImDrawCallback_ResetRenderState). Call after
/// ImGui::Render(), before the OpenGL3 backend draws.
void route_solid_fills(ImDrawList& list, float white_u, float white_v);

/// Callbacks around quads that map the font atlas one texel to one whole pixel (the hatching
/// tiles): nearest sampling gives the same pixels there, for a quarter of the texel reads.
/// Glyphs sit at fractional positions and keep ImGui's linear sampling.
void begin_nearest_sampling(ImDrawList& list);
void end_nearest_sampling(ImDrawList& list);

/// Whether the window takes the paths for software GL: solid fills routed here, the ImGui
/// canvas's solid bars for lines and outlines and its hatching tiles. On by default; bench_gui
/// turns them off every other frame to measure what they save.
void set_fast_paths(bool on);
bool fast_paths();

/// route_solid_fills() over every list (when fast_paths()), then
/// ImGui_ImplOpenGL3_RenderDrawData(). Needs the current ImGui context's OpenGL3 backend and its GL
/// context current.
void render_draw_data(ImDrawData* data);

} // namespace shardscope::render
