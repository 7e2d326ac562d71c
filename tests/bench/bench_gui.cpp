// The GUI's costs, measured side by side in one run: the window's frame time on a 1024-device
// mesh with a 16-tensor program (mesh panel with a device hovered, tiling of 1024 tiles, plan,
// step-through), and the re-check per keystroke while typing a statement. Needs a display:
// `xvfb-run -a build/tests/bench/bench_gui` (Mesa's software OpenGL under Xvfb).
// Each view alternates frames with and without the paths for software GL (render::
// set_fast_paths: solid fills without the atlas, lines as solid bars, hatching tiles), so the
// two figures share the machine's load; --no-compare draws every frame with them.
// BENCH_GUI_VERBOSE=1 adds each view's vertices and the pixels llvmpipe fills, by kind.
#include "frontend/document.hpp"
#include "render/gui/imgui_canvas.hpp"
#include "render/gui/offscreen.hpp"
#include "render/gui/solid_fill.hpp"
#include "render/gui/view.hpp"

#include "bench_util.hpp"

#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace shardscope;

namespace {

// 1024 devices (32x32), 16 tensors: X Y A Z B C D E V F G H M K N L.
const char* kProgram = R"(# bench: 16 tensors on a 32x32 mesh
mesh 32x32
dim a=4096 b=4096 c=4096 d=1024
A_{a_0 b_1} = X_{a_0 c} Y_{c b_1}
B_{a_0 b_1} = A_{a_0 b_1} + Z_{a_0 b_1}
C_{a b_1} = B_{a_0 b_1}
D_{a_0 b} = C_{a b_1}
E_{a_0 d}{U_1} = D_{a_0 b_1} V_{b_1 d}
F_{a_0 d} = E_{a_0 d}{U_1}
G_{a_0 d} = phi(F_{a_0 d})
H_{d a_0} = G_{a_0 d}
K_{a_0 b_1} = H_{d a_0} M_{d b_1}
L_{a_{01}} = K_{a_0 b_1} N_{b_1}
)";

/// A canvas that draws nothing: the pictures' CPU cost without GL.
struct NullCanvas final : render::Canvas {
    std::size_t calls = 0;
    void fill_rect(const render::Rect&, render::Color) override { ++calls; }
    void stroke_rect(const render::Rect&, render::Color, float) override { ++calls; }
    void line(render::Vec2, render::Vec2, render::Color, float) override { ++calls; }
    void text(render::Vec2, render::Color, std::string_view, float) override { ++calls; }
    render::Vec2 text_size(std::string_view s, float size) const override {
        return {render::mono_text_width(s, size), size};
    }
};

struct Stats {
    double mean = 0, median = 0, p95 = 0, max = 0;
};

Stats stats(std::vector<double> v) {
    Stats s;
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    for (double x : v)
        s.mean += x;
    s.mean /= static_cast<double>(v.size());
    s.median = v[v.size() / 2];
    s.p95 = v[std::min(v.size() - 1, v.size() * 95 / 100)];
    s.max = v.back();
    return s;
}

} // namespace

int main(int argc, char** argv) {
    int frames = 200;
    bool ab = true;
    const char* shot = nullptr;
    const char* only = nullptr;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--frames") && i + 1 < argc)
            frames = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--no-compare"))
            ab = false;
        else if (!std::strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!std::strcmp(argv[i], "--screenshot") && i + 1 < argc)
            shot = argv[++i];
        else {
            std::fprintf(stderr,
                         "usage: %s [--frames N] [--only NAME-PART] [--no-compare] [--screenshot "
                         "HOVER.png]\n",
                         argv[0]);
            return 2;
        }
    }

    // Re-check per keystroke: type one more statement, a character at a time.
    const std::string typed = "Q_{a_0 b_1} = A_{a_0 b_1} + K_{a_0 b_1}\n";
    std::vector<double> keystroke_ms;
    std::size_t sink = 0;
    for (int round = 0; round < 5; ++round) {
        std::string text = kProgram;
        for (char ch : typed) {
            text += ch;
            const auto t0 = std::chrono::steady_clock::now();
            const auto checked = frontend::check_text("bench.ein", text);
            keystroke_ms.push_back(bench::seconds_since(t0) * 1e3);
            sink += checked.plan.diagnostics.size();
        }
    }
    // Typing a comment: every keystroke leaves a valid program, so each re-check runs the
    // checker over all 10 statements.
    std::vector<double> comment_ms;
    for (int round = 0; round < 5; ++round) {
        std::string text = std::string(kProgram) + "#";
        for (char ch : std::string(" the hidden width is cut on axis 1\n")) {
            text += ch;
            const auto t0 = std::chrono::steady_clock::now();
            const auto c = frontend::check_text("bench.ein", text);
            comment_ms.push_back(bench::seconds_since(t0) * 1e3);
            sink += c.plan.statements.size();
        }
    }
    const auto checked = frontend::check_text("bench.ein", kProgram);
    if (sink == 0 || checked.plan.errors() > 0 || checked.plan.mesh.device_count() != 1024) {
        std::fprintf(stderr, "bench_gui: the bench program does not check\n");
        return 1;
    }

    // The pictures without GL: what the CPU spends on them per frame.
    struct CpuCase {
        const char* name;
        render::View view;
        int statement;
    };
    std::vector<std::pair<std::string, Stats>> cpu;
    for (const CpuCase& cc : {CpuCase{"mesh picture (1024 devices)", render::View::Mesh, 0},
                              CpuCase{"tiling picture (1024 tiles)", render::View::Tiling, 0},
                              CpuCase{"plan picture", render::View::Plan, 0},
                              CpuCase{"step-through picture", render::View::Steps, 4}}) {
        std::vector<double> ms;
        render::Selection sel;
        sel.statement = cc.statement;
        sel.step = 1;
        for (int i = 0; i < 50; ++i) {
            NullCanvas nc;
            const auto t0 = std::chrono::steady_clock::now();
            render::draw_picture(nc, {0, 0, 880, 460}, checked.plan, cc.view, sel, 15);
            ms.push_back(bench::seconds_since(t0) * 1e3);
        }
        cpu.emplace_back(cc.name, stats(ms));
    }

    render::GlStatus status;
    std::string error;
    const int W = 1400, H = 900;
    GLFWwindow* window = render::create_gl_window(W, H, "bench_gui", true, status, error);
    if (!window) {
        std::fprintf(stderr, "bench_gui: %s (run it as: xvfb-run -a %s)\n", error.c_str(), argv[0]);
        return 2;
    }
    glfwSwapInterval(0);
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    render::apply_style();
    const render::Fonts fonts = render::setup_fonts(17.0f);
    ImGui_ImplOpenGL3_Init("#version 330");
    const char* renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));

    std::string text = kProgram;
    render::VerifyState verify;
    std::vector<std::string> samples;
    render::MainView view(fonts);
    render::ViewInput in;
    in.text = &text;
    in.plan = &checked.plan;
    in.diagnostics = &checked.plan.diagnostics;
    in.verify = &verify;
    in.samples = &samples;
    in.file = "bench.ein";

    struct Config {
        const char* name;
        render::MainView::Panel panel;
        int statement;
        float mx, my; ///< the pointer (-1: outside the window)
    };
    // The mesh panel's cells start near (557, 612) in a 1400x900 window.
    const Config configs[] = {
        {"baseline: clear and swap, no ImGui window", render::MainView::Panel::Mesh, -1, -1, -1},
        {"baseline: one empty ImGui window over the whole window", render::MainView::Panel::Mesh,
         -2, -1, -1},
        {"experiment: mesh picture alone", render::MainView::Panel::Mesh, -3, -1, -1},
        {"experiment: tiling picture alone", render::MainView::Panel::Mesh, -4, -1, -1},
        {"experiment: one opaque rectangle over the whole window", render::MainView::Panel::Mesh,
         -5, -1, -1},
        {"mesh panel, 1024 devices, pointer on a device (16 tensors' holdings)",
         render::MainView::Panel::Mesh, 0, 600, 660},
        {"mesh panel, 1024 devices, no hover", render::MainView::Panel::Mesh, 0, -1, -1},
        {"tiling of A (32x32 = 1024 tiles) + plan panel", render::MainView::Panel::Plan, 0, -1, -1},
        {"step-through of E (partial, hatched)", render::MainView::Panel::Steps, 4, -1, -1},
    };
    std::printf("bench_gui: %d frames per view, %dx%d window, GL renderer: %s\n", frames, W, H,
                renderer ? renderer : "?");
    std::printf("program: 1024 devices (mesh 32x32), 16 tensors, %zu statements\n",
                checked.plan.statements.size());
    if (ab)
        std::printf("each view: frames with the software-GL paths (what the window does), and "
                    "indented, the\nframes between them without (ImGui's renderer and lines as "
                    "before); --no-compare: only the first\n");
    std::printf("\n");
    std::printf("%-72s %8s %8s %8s %8s\n", "frame time, ms", "mean", "median", "p95", "max");
    for (const auto& c : configs) {
        if (only && !std::strstr(c.name, only)) continue;
        view.show_panel(c.panel);
        view.selection() = {};
        view.selection().statement = c.statement;
        view.selection().step = 1;
        std::vector<double> ms, ms_plain;
        for (int f = 0; f < frames + 10; ++f) {
            const auto t0 = std::chrono::steady_clock::now();
            io.DisplaySize = {static_cast<float>(W), static_cast<float>(H)};
            io.DeltaTime = 1.0f / 60;
            // A pointer that moves a pixel back and forth, as a hand on a mouse does.
            io.MousePos = {c.mx < 0 ? -FLT_MAX : c.mx + static_cast<float>(f % 2),
                           c.my < 0 ? -FLT_MAX : c.my};
            // Side by side: every other frame without the software-GL paths (as before them).
            const bool plain = ab && f % 2 == 0;
            render::set_fast_paths(!plain);
            ImGui_ImplOpenGL3_NewFrame();
            ImGui::NewFrame();
            if (c.statement >= 0) (void)view.frame(in);
            if (c.statement <= -2) {
                ImGui::SetNextWindowPos({0, 0});
                ImGui::SetNextWindowSize({static_cast<float>(W), static_cast<float>(H)});
                ImGui::Begin("empty", nullptr, ImGuiWindowFlags_NoDecoration);
                {
                    // The canvas draws what it collected when it goes: before End().
                    render::ImGuiCanvas cv(ImGui::GetWindowDrawList(), fonts.mono, true,
                                           &fonts.hatch);
                    render::Selection sel;
                    if (c.statement == -3)
                        render::draw_picture(cv, {500, 500, 1390, 890}, checked.plan,
                                             render::View::Mesh, sel, 15);
                    if (c.statement == -5)
                        cv.fill_rect({0, 0, static_cast<float>(W), static_cast<float>(H)},
                                     {250, 250, 245, 255});
                    if (c.statement == -4)
                        render::draw_picture(cv, {500, 40, 1390, 500}, checked.plan,
                                             render::View::Tiling, sel, 15);
                }
                ImGui::End();
            }
            ImGui::Render();
            glViewport(0, 0, W, H);
            glClearColor(1, 1, 1, 1);
            glClear(GL_COLOR_BUFFER_BIT);
            render::render_draw_data(ImGui::GetDrawData());
            glFinish();
            if (shot && c.mx >= 0 && f == frames + 9) {
                const auto png = render::encode_png(W, H, render::read_pixels(W, H), true);
                if (FILE* fp = std::fopen(shot, "wb")) {
                    std::fwrite(png.data(), 1, png.size(), fp);
                    std::fclose(fp);
                }
            }
            glfwSwapBuffers(window);
            glfwPollEvents();
            if (f >= 10) (plain ? ms_plain : ms).push_back(bench::seconds_since(t0) * 1e3);
        }
        const auto s = stats(ms);
        std::printf("%-72s %8.2f %8.2f %8.2f %8.2f\n", c.name, s.mean, s.median, s.p95, s.max);
        if (ab) {
            const auto p = stats(ms_plain);
            std::printf("%-72s %8.2f %8.2f %8.2f %8.2f\n",
                        "    without the software-GL paths (every other frame)", p.mean, p.median,
                        p.p95, p.max);
        }
        if (std::getenv("BENCH_GUI_VERBOSE")) {
            int cmds = 0;
            const ImDrawData* dd = ImGui::GetDrawData();
            for (int l = 0; dd && l < dd->CmdListsCount; ++l)
                cmds += dd->CmdLists[l]->CmdBuffer.Size;
            std::printf("    %d vertices, %d indices, %d draw commands\n", io.MetricsRenderVertices,
                        io.MetricsRenderIndices, cmds);
            // What llvmpipe fills, by how it is drawn (as render_draw_data routes it).
            double px[3] = {}, tris[3] = {};
            const ImVec2 white = io.Fonts->TexUvWhitePixel;
            for (int l = 0; dd && l < dd->CmdListsCount; ++l) {
                const ImDrawList* dl = dd->CmdLists[l];
                for (const ImDrawCmd& cmd : dl->CmdBuffer) {
                    if (cmd.UserCallback || !cmd.ElemCount) continue;
                    for (const auto& r : render::fill_runs(&dl->VtxBuffer[cmd.VtxOffset],
                                                           &dl->IdxBuffer[cmd.IdxOffset],
                                                           cmd.ElemCount, white.x, white.y)) {
                        px[static_cast<int>(r.kind)] += r.pixels;
                        tris[static_cast<int>(r.kind)] += r.count / 3;
                    }
                }
            }
            std::printf("    textured %.0f triangles %.0f px, solid blended %.0f / %.0f px, "
                        "solid opaque %.0f / %.0f px\n",
                        tris[0], px[0], tris[1], px[1], tris[2], px[2]);
        }
    }
    std::printf("\n%-72s %8s %8s %8s %8s\n", "the pictures' CPU time (no GL), ms", "mean", "median",
                "p95", "max");
    for (const auto& [name, st] : cpu)
        std::printf("%-72s %8.2f %8.2f %8.2f %8.2f\n", name.c_str(), st.mean, st.median, st.p95,
                    st.max);
    const auto k = stats(keystroke_ms);
    std::printf("\n%-72s %8s %8s %8s %8s\n", "re-check per keystroke (parse + check), ms", "mean",
                "median", "p95", "max");
    std::printf("%-72s %8.2f %8.2f %8.2f %8.2f\n",
                ("typing a statement (mostly syntax errors: parse only) (" +
                 std::to_string(keystroke_ms.size()) + " keystrokes)")
                    .c_str(),
                k.mean, k.median, k.p95, k.max);
    const auto kc = stats(comment_ms);
    std::printf("%-72s %8.2f %8.2f %8.2f %8.2f\n",
                ("typing a comment: every keystroke a full check (" +
                 std::to_string(comment_ms.size()) + " keystrokes)")
                    .c_str(),
                kc.mean, kc.median, kc.p95, kc.max);
    ImGui_ImplOpenGL3_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(window);
    return 0;
}
