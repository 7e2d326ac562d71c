#include "render/gui/fonts.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

namespace shardscope::render {

const unsigned short* notation_glyph_ranges() {
    static const ImWchar ranges[] = {
        0x0020, 0x00FF, // Basic Latin, Latin-1 (·, ², ³, ¹)
        0x02B0, 0x02FF, // spacing modifier letters (ʳ, ˢ)
        0x0370, 0x03FF, // Greek (φ, Σ, σ)
        0x1D00, 0x1DBF, // phonetic extensions (superscript letters ᵃ ᵇ ... ᶠ)
        0x2000, 0x206F, // general punctuation (′ ″ … ‖)
        0x2070, 0x209F, // superscripts and subscripts (⁰ ₀ ₁ ₐ ᵢ)
        0x2190, 0x21FF, // arrows (→ ←)
        0x2200, 0x22FF, // mathematical operators (∑ ⋅ ≤)
        0x2500, 0x259F, // box drawing and blocks
        0x25A0, 0x25FF, // geometric shapes (▶ ■)
        0x2713, 0x2717, // ✓ ✗
        0,
    };
    return ranges;
}

namespace {

std::string find_font(const char* file) {
    for (const char* dir : {"/usr/share/fonts/truetype/dejavu/", "/usr/share/fonts/dejavu/",
                            "/usr/local/share/fonts/"}) {
        std::string p = std::string(dir) + file;
        std::error_code ec;
        if (std::filesystem::exists(p, ec)) return p;
    }
    return {};
}

} // namespace

void apply_style() {
    ImGui::StyleColorsLight();
    ImGuiStyle& style = ImGui::GetStyle();
    style.Colors[ImGuiCol_WindowBg].w = 0;
    style.Colors[ImGuiCol_ChildBg].w = 0;
    // Opaque tooltips: the mesh's hover tooltip is a large box, and opaque it is filled
    // without blending (render_draw_data).
    style.Colors[ImGuiCol_PopupBg].w = 1;
    style.WindowBorderSize = 0;
    style.Colors[ImGuiCol_FrameBg] = {0.90f, 0.90f, 0.92f, 1.0f}; // visible on the white clear
    style.FrameBorderSize = 0;
}

std::vector<std::uint8_t> hatch_tile_alpha(int period, int side, float width) {
    std::vector<std::uint8_t> a(static_cast<std::size_t>(side) * static_cast<std::size_t>(side));
    const float p = static_cast<float>(period);
    for (int y = 0; y < side; ++y)
        for (int x = 0; x < side; ++x) {
            // Distance along x + y from the pixel to the nearest line, then across the line.
            float d = std::fmod(static_cast<float>(x + y) - p / 2, p);
            if (d < 0) d += p;
            d = std::min(d, p - d) / std::sqrt(2.0f);
            const float cover = std::clamp(width / 2 + 0.5f - d, 0.0f, 1.0f);
            a[static_cast<std::size_t>(y * side + x)] =
                static_cast<std::uint8_t>(std::lround(cover * 255));
        }
    return a;
}

void paint_hatch_tiles(const HatchTiles& tiles) {
    ImFontAtlas* atlas = ImGui::GetIO().Fonts;
    unsigned char* px = nullptr;
    int w = 0, h = 0;
    atlas->GetTexDataAsRGBA32(&px, &w, &h);
    for (int p = HatchTiles::kMinPeriod; p <= HatchTiles::kMaxPeriod; ++p) {
        const int id = tiles.rect[p - HatchTiles::kMinPeriod];
        const ImFontAtlasCustomRect* r = id >= 0 ? atlas->GetCustomRectByIndex(id) : nullptr;
        if (!r || !r->IsPacked()) continue;
        const int side = HatchTiles::side(p);
        const auto alpha = hatch_tile_alpha(p, side, HatchTiles::kWidth);
        for (int y = 0; y < side; ++y)
            for (int x = 0; x < side; ++x) {
                unsigned char* o = px + (static_cast<std::size_t>(r->Y + y) * w + r->X + x) * 4;
                o[0] = o[1] = o[2] = 255; // white, tinted by the vertex colour
                o[3] = alpha[static_cast<std::size_t>(y * side + x)];
            }
    }
}

Fonts load_fonts(float size) {
    ImGuiIO& io = ImGui::GetIO();
    Fonts f;
    for (int p = HatchTiles::kMinPeriod; p <= HatchTiles::kMaxPeriod; ++p)
        f.hatch.rect[p - HatchTiles::kMinPeriod] =
            io.Fonts->AddCustomRectRegular(HatchTiles::side(p), HatchTiles::side(p));
    const std::string sans = find_font("DejaVuSans.ttf");
    const std::string mono = find_font("DejaVuSansMono.ttf");
    if (sans.empty() || mono.empty()) {
        static bool warned = false;
        if (!warned)
            std::fprintf(stderr, "shardscope: warning: DejaVu fonts not found (install "
                                 "fonts-dejavu-core); subscripts and Greek will show as '?'\n");
        warned = true;
        ImFontConfig cfg;
        cfg.SizePixels = 13;
        f.ui = f.mono = io.Fonts->AddFontDefault(&cfg);
        f.ui_large = f.mono_large = f.ui;
        return f;
    }
    ImFontConfig cfg;
    cfg.OversampleH = 2;
    cfg.OversampleV = 1;
    const ImWchar* ranges = notation_glyph_ranges();
    f.ui = io.Fonts->AddFontFromFileTTF(sans.c_str(), size, &cfg, ranges);
    f.mono = io.Fonts->AddFontFromFileTTF(mono.c_str(), size, &cfg, ranges);
    f.ui_large = io.Fonts->AddFontFromFileTTF(sans.c_str(), size * 1.6f, &cfg, ranges);
    f.mono_large = io.Fonts->AddFontFromFileTTF(mono.c_str(), size * 1.6f, &cfg, ranges);
    f.dejavu = f.ui && f.mono && f.ui_large && f.mono_large;
    if (!f.dejavu) {
        f.ui = f.mono = f.ui_large = f.mono_large = io.Fonts->AddFontDefault();
    }
    return f;
}

} // namespace shardscope::render
