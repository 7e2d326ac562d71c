// The window's paths for software GL, without GL: the draw-list rewriting of
// render/gui/solid_fill (which triangles count as solid; the rewritten commands draw every
// index once, in order, solid runs wrapped in the program switch and ImGui's reset), the
// hatching tiles (render/gui/fonts) and the fill images (render/gui/fill_image).
#include "render/gui/fill_image.hpp"
#include "render/gui/fonts.hpp"
#include "render/gui/solid_fill.hpp"

#include <doctest/doctest.h>

#include <imgui.h>

#include <algorithm>
#include <vector>

using namespace shardscope::render;

namespace {

constexpr float kU = 0.5f, kV = 0.25f; // the white pixel of these tests

/// Two triangles covering [x0,x1)x[y0,y1), at `uv`, colour `col`.
void quad(std::vector<ImDrawVert>& vtx, std::vector<ImDrawIdx>& idx, float x0, float y0, float x1,
          float y1, ImVec2 uv, ImU32 col) {
    const auto base = static_cast<ImDrawIdx>(vtx.size());
    for (ImVec2 p : {ImVec2{x0, y0}, ImVec2{x1, y0}, ImVec2{x1, y1}, ImVec2{x0, y1}})
        vtx.push_back({p, uv, col});
    for (int k : {0, 1, 2, 0, 2, 3})
        idx.push_back(static_cast<ImDrawIdx>(base + k));
}

} // namespace

TEST_CASE("fill runs: solid quads at the white pixel, opaque or blended; small runs stay") {
    std::vector<ImDrawVert> vtx;
    std::vector<ImDrawIdx> idx;
    const ImU32 red = IM_COL32(255, 0, 0, 255), glass = IM_COL32(255, 255, 255, 210);
    quad(vtx, idx, 0, 0, 100, 100, {kU, kV}, red);     // 10000 px opaque
    quad(vtx, idx, 100, 0, 200, 100, {kU, kV}, red);   // + 10000
    quad(vtx, idx, 0, 0, 100, 100, {0.1f, 0.2f}, red); // textured (a glyph)
    quad(vtx, idx, 0, 0, 10, 10, {kU, kV}, glass);     // 100 px: too small to switch for
    quad(vtx, idx, 0, 0, 10, 10, {0.1f, 0.2f}, red);   // textured
    quad(vtx, idx, 0, 100, 100, 200, {kU, kV}, glass); // 10000 px translucent
    const auto runs = fill_runs(vtx.data(), idx.data(), static_cast<unsigned>(idx.size()), kU, kV);
    REQUIRE(runs.size() == 3);
    CHECK(runs[0].kind == FillKind::SolidOpaque);
    CHECK(runs[0].first == 0);
    CHECK(runs[0].count == 12);
    CHECK(runs[1].kind == FillKind::Textured); // the glyph, the small box, the glyph
    CHECK(runs[1].first == 12);
    CHECK(runs[1].count == 18);
    CHECK(runs[2].kind == FillKind::SolidBlended);
    CHECK(runs[2].first == 30);
    CHECK(runs[2].count == 6);

    SUBCASE("a triangle with one vertex off the white pixel is textured") {
        vtx[1].uv = {kU, kV + 0.01f}; // only in the first triangle
        const auto r =
            fill_runs(vtx.data(), idx.data(), static_cast<unsigned>(idx.size()), kU, kV, 0);
        REQUIRE(r.size() >= 2);
        CHECK(r[0].kind == FillKind::Textured);
        CHECK(r[0].count == 3);
        CHECK(r[1].kind == FillKind::SolidOpaque);
    }
    SUBCASE("one translucent vertex makes its triangle blended") {
        vtx[1].col = IM_COL32(255, 0, 0, 254);
        const auto r =
            fill_runs(vtx.data(), idx.data(), static_cast<unsigned>(idx.size()), kU, kV, 0);
        CHECK(r[0].kind == FillKind::SolidBlended);
        CHECK(r[0].count == 3);
    }
    SUBCASE("opaque vertices of two colours are blended (smoothly shaded), not flat") {
        vtx[1].col = IM_COL32(0, 0, 255, 255);
        const auto r =
            fill_runs(vtx.data(), idx.data(), static_cast<unsigned>(idx.size()), kU, kV, 0);
        CHECK(r[0].kind == FillKind::SolidBlended);
        CHECK(r[0].count == 3);
    }
    SUBCASE("no triangles, no runs") {
        CHECK(fill_runs(vtx.data(), idx.data(), 0, kU, kV).empty());
    }
}

TEST_CASE("route_solid_fills rewrites an ImGui draw list: every index once, in order") {
    ImGuiContext* ctx = ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = {800, 600};
    io.DeltaTime = 1.0f / 60;
    unsigned char* px = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&px, &w, &h); // builds the atlas; no GL needed
    ImGui::NewFrame();
    ImDrawList* dl = ImGui::GetBackgroundDrawList();
    dl->AddRectFilled({10, 10}, {410, 310}, IM_COL32(200, 30, 30, 255));    // opaque, large
    dl->AddText({20, 20}, IM_COL32(0, 0, 0, 255), "tile d0");               // textured
    dl->AddRectFilled({10, 320}, {410, 520}, IM_COL32(255, 255, 255, 128)); // translucent
    dl->AddLine({0, 0}, {400, 400}, IM_COL32(0, 0, 0, 255));                // AA line: textured
    ImGui::Render();

    const ImVector<ImDrawCmd> before = dl->CmdBuffer;
    REQUIRE(before.Size == 1);
    const ImVec2 white = io.Fonts->TexUvWhitePixel;
    route_solid_fills(*dl, white.x, white.y);
    const ImVector<ImDrawCmd>& after = dl->CmdBuffer;
    // [solid on, the rect, reset] [text] [solid on, the translucent rect, reset] [line]
    REQUIRE(after.Size == 8);
    unsigned next = before[0].IdxOffset;
    int switches = 0, resets = 0;
    for (const ImDrawCmd& c : after) {
        if (c.UserCallback == ImDrawCallback_ResetRenderState) {
            ++resets;
            continue;
        }
        if (c.UserCallback) {
            ++switches;
            continue;
        }
        CHECK(c.IdxOffset == next); // in order, no gaps
        CHECK(c.VtxOffset == before[0].VtxOffset);
        CHECK(c.TextureId == before[0].TextureId);
        next += c.ElemCount;
    }
    CHECK(next == before[0].IdxOffset + before[0].ElemCount);
    CHECK(switches == 2);
    CHECK(resets == 2);
    CHECK((after[0].UserCallback != nullptr));
    CHECK(after[1].ElemCount == 6);
    CHECK((after[2].UserCallback == ImDrawCallback_ResetRenderState));

    SUBCASE("nearest sampling: a callback before and one after, passed through unchanged") {
        ImDrawList& fg = *ImGui::GetForegroundDrawList();
        begin_nearest_sampling(fg);
        fg.PrimReserve(6, 4);
        fg.PrimRectUV({0, 0}, {64, 64}, {0.1f, 0.1f}, {0.2f, 0.2f}, IM_COL32_WHITE);
        end_nearest_sampling(fg);
        int callbacks = 0, with_data = 0;
        for (const ImDrawCmd& c : fg.CmdBuffer) {
            callbacks += c.UserCallback != nullptr;
            with_data += c.UserCallbackData != nullptr;
        }
        CHECK(callbacks == 2);
        CHECK(with_data == 1);
        CHECK(fg.CmdBuffer[0].UserCallbackData != nullptr);
        const int n = fg.CmdBuffer.Size;
        route_solid_fills(fg, white.x, white.y);
        CHECK(fg.CmdBuffer.Size == n);
    }
    SUBCASE("a list with nothing solid is left as it was") {
        ImDrawList& fg = *ImGui::GetForegroundDrawList();
        const int n = fg.CmdBuffer.Size;
        route_solid_fills(fg, white.x, white.y);
        CHECK(fg.CmdBuffer.Size == n);
    }
    ImGui::DestroyContext(ctx);
}

TEST_CASE("hatching tiles: 45-degree lines that repeat seamlessly across tiles") {
    for (int period : {HatchTiles::kMinPeriod, 7, 9, 12, HatchTiles::kMaxPeriod}) {
        CAPTURE(period);
        const int side = HatchTiles::side(period);
        CHECK(side % period == 0);
        CHECK(side >= 32);
        const auto a = hatch_tile_alpha(period, side, HatchTiles::kWidth);
        REQUIRE(a.size() == static_cast<std::size_t>(side * side));
        auto at = [&](int x, int y) {
            return a[static_cast<std::size_t>(((y % side + side) % side) * side +
                                              (x % side + side) % side)];
        };
        int lit = 0;
        for (int y = 0; y < side; ++y)
            for (int x = 0; x < side; ++x) {
                CHECK(at(x, y) == at(x + 1, y - 1));  // constant along x + y = k, across edges
                CHECK(at(x, y) == at(x + period, y)); // one period on
                lit += at(x, y) > 64;
            }
        // Lines 1.2 px wide: two or three of every `period` pixels along a row are lit.
        const double share = static_cast<double>(lit) / (side * side);
        CHECK(share > 1.0 / period);
        CHECK(share <= 3.0 / period);
        CHECK(*std::max_element(a.begin(), a.end()) >= 180);
    }
}

TEST_CASE("fill images: rectangles painted on the pixels whose centres they cover, in order") {
    const std::uint32_t red = IM_COL32(255, 0, 0, 255), blue = IM_COL32(0, 0, 255, 255);
    const std::vector<PendingFill> fills = {
        {{10, 20, 14, 22}, red},           // pixels x 10..13, y 20..21
        {{12.4f, 20.6f, 15.5f, 23}, blue}, // centres 12.5..14.5 in x, 21.5..22.5 in y: on top
    };
    const FillImage img = paint_fills(fills, {0, 0, 100, 100});
    CHECK(img.x0 == 10);
    CHECK(img.y0 == 20);
    CHECK(img.w == 5); // x 10..14
    CHECK(img.h == 3); // y 20..22
    REQUIRE(img.px.size() == 15);
    auto at = [&](int x, int y) { return img.px[static_cast<std::size_t>((y - 20) * 5 + x - 10)]; };
    CHECK(at(10, 20) == red);
    CHECK(at(13, 20) == red);
    CHECK(at(14, 20) == 0u); // not covered: transparent
    CHECK(at(11, 21) == red);
    CHECK(at(12, 21) == blue);
    CHECK(at(14, 22) == blue);
    CHECK(at(10, 22) == 0u);

    SUBCASE("clipped to the clip rectangle") {
        const FillImage c = paint_fills(fills, {11, 0, 13, 21});
        CHECK(c.x0 == 11);
        CHECK(c.w == 2);
        CHECK(c.h == 1);
        CHECK(c.px == std::vector<std::uint32_t>{red, red});
    }
    SUBCASE("nothing inside the clip: empty") {
        CHECK(paint_fills(fills, {50, 50, 60, 60}).w == 0);
        CHECK(paint_fills({}, {0, 0, 100, 100}).px.empty());
    }
}
