#include "render/gui/offscreen.hpp"

#include <algorithm>

#include "render/gui/imgui_canvas.hpp"
#include "render/gui/solid_fill.hpp"
#include "render/palette.hpp"

#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GL/glext.h>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <stb/stb_image_write.h>

#include <cstdlib>
#include <cstring>

namespace shardscope::render {

namespace {

std::string& last_glfw_error() {
    static std::string e;
    return e;
}

void on_glfw_error(int, const char* description) {
    last_glfw_error() = description ? description : "unknown GLFW error";
}

void append_bytes(void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data),
                                               static_cast<std::size_t>(size));
}

} // namespace

GlStatus init_glfw(std::string& error) {
    static int state = 0; // 0 not tried, 1 ok, 2 failed
    static GlStatus failure = GlStatus::Failed;
    static std::string failure_text;
    if (state == 1) return GlStatus::Ok;
    if (state == 2) {
        error = failure_text;
        return failure;
    }
    glfwSetErrorCallback(on_glfw_error);
    const char* display = std::getenv("DISPLAY");
    const char* wayland = std::getenv("WAYLAND_DISPLAY");
    if ((!display || !*display) && (!wayland || !*wayland)) {
        state = 2;
        failure = GlStatus::NoDisplay;
        failure_text = error = "no display (DISPLAY is not set)";
        return failure;
    }
    if (!glfwInit()) {
        state = 2;
        const std::string& e = last_glfw_error();
        failure = GlStatus::NoDisplay;
        failure_text = error = "cannot open the display " + std::string(display ? display : "") +
                               (e.empty() ? "" : ": " + e);
        return failure;
    }
    std::atexit([] { glfwTerminate(); });
    state = 1;
    return GlStatus::Ok;
}

GLFWwindow* create_gl_window(int width, int height, const char* title, bool visible,
                             GlStatus& status, std::string& error) {
    status = init_glfw(error);
    if (status != GlStatus::Ok) return nullptr;
    glfwDefaultWindowHints();
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_VISIBLE, visible ? GLFW_TRUE : GLFW_FALSE);
    last_glfw_error().clear();
    GLFWwindow* w = glfwCreateWindow(width, height, title, nullptr, nullptr);
    if (!w) {
        status = GlStatus::Failed;
        error = "cannot create an OpenGL 3.3 window" +
                (last_glfw_error().empty() ? std::string() : ": " + last_glfw_error());
        return nullptr;
    }
    glfwMakeContextCurrent(w);
    return w;
}

std::string encode_png(int width, int height, const std::vector<std::uint8_t>& rgba,
                       bool bottom_up) {
    std::string out;
    stbi_flip_vertically_on_write(bottom_up ? 1 : 0);
    stbi_write_png_to_func(append_bytes, &out, width, height, 4, rgba.data(), width * 4);
    stbi_flip_vertically_on_write(0);
    return out;
}

std::vector<std::uint8_t> read_pixels(int width, int height) {
    std::vector<std::uint8_t> px(static_cast<std::size_t>(width) * height * 4);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
    return px;
}

Fonts setup_fonts(float size) {
    Fonts f = load_fonts(size);
    ImGui::GetIO().Fonts->Build();
    paint_hatch_tiles(f.hatch);
    return f;
}

PixelBox ink_box(int width, int height, const std::vector<std::uint8_t>& rgba, int margin) {
    PixelBox b{width, height, 0, 0};
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            const auto* p = &rgba[(static_cast<std::size_t>(y) * static_cast<std::size_t>(width) +
                                   static_cast<std::size_t>(x)) *
                                  4];
            if (p[0] == 255 && p[1] == 255 && p[2] == 255) continue;
            b.x0 = std::min(b.x0, x);
            b.y0 = std::min(b.y0, y);
            b.x1 = std::max(b.x1, x + 1);
            b.y1 = std::max(b.y1, y + 1);
        }
    if (b.x1 <= b.x0 || b.y1 <= b.y0) return {0, 0, width, height};
    return {std::max(0, b.x0 - margin), std::max(0, b.y0 - margin), std::min(width, b.x1 + margin),
            std::min(height, b.y1 + margin)};
}

GlStatus render_png(int width, int height, const std::function<void(Canvas&)>& draw,
                    std::string& png, std::string& error, float font_scale, bool tight) {
    GlStatus status = GlStatus::Ok;
    GLFWwindow* window = create_gl_window(64, 64, "shardscope render", false, status, error);
    if (!window) return status;
    auto gen_fbos =
        reinterpret_cast<PFNGLGENFRAMEBUFFERSPROC>(glfwGetProcAddress("glGenFramebuffers"));
    auto bind_fbo =
        reinterpret_cast<PFNGLBINDFRAMEBUFFERPROC>(glfwGetProcAddress("glBindFramebuffer"));
    auto gen_rbos =
        reinterpret_cast<PFNGLGENRENDERBUFFERSPROC>(glfwGetProcAddress("glGenRenderbuffers"));
    auto bind_rbo =
        reinterpret_cast<PFNGLBINDRENDERBUFFERPROC>(glfwGetProcAddress("glBindRenderbuffer"));
    auto rbo_storage =
        reinterpret_cast<PFNGLRENDERBUFFERSTORAGEPROC>(glfwGetProcAddress("glRenderbufferStorage"));
    auto attach_rbo = reinterpret_cast<PFNGLFRAMEBUFFERRENDERBUFFERPROC>(
        glfwGetProcAddress("glFramebufferRenderbuffer"));
    auto check_fbo = reinterpret_cast<PFNGLCHECKFRAMEBUFFERSTATUSPROC>(
        glfwGetProcAddress("glCheckFramebufferStatus"));
    auto del_fbos =
        reinterpret_cast<PFNGLDELETEFRAMEBUFFERSPROC>(glfwGetProcAddress("glDeleteFramebuffers"));
    auto del_rbos =
        reinterpret_cast<PFNGLDELETERENDERBUFFERSPROC>(glfwGetProcAddress("glDeleteRenderbuffers"));
    if (!gen_fbos || !bind_fbo || !gen_rbos || !bind_rbo || !rbo_storage || !attach_rbo ||
        !check_fbo || !del_fbos || !del_rbos) {
        glfwDestroyWindow(window);
        error = "the OpenGL context has no framebuffer objects";
        return GlStatus::Failed;
    }
    GLint max_size = 0;
    glGetIntegerv(GL_MAX_RENDERBUFFER_SIZE, &max_size);
    if (width > max_size || height > max_size) {
        glfwDestroyWindow(window);
        error = "the picture (" + std::to_string(width) + "x" + std::to_string(height) +
                ") is larger than this OpenGL allows (" + std::to_string(max_size) + ")";
        return GlStatus::Failed;
    }
    GLuint fbo = 0, rbo = 0;
    gen_fbos(1, &fbo);
    bind_fbo(GL_FRAMEBUFFER, fbo);
    gen_rbos(1, &rbo);
    bind_rbo(GL_RENDERBUFFER, rbo);
    rbo_storage(GL_RENDERBUFFER, GL_RGBA8, width, height);
    attach_rbo(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, rbo);
    if (check_fbo(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE) {
        del_rbos(1, &rbo);
        del_fbos(1, &fbo);
        glfwDestroyWindow(window);
        error = "cannot make an offscreen framebuffer";
        return GlStatus::Failed;
    }

    IMGUI_CHECKVERSION();
    ImGuiContext* previous = ImGui::GetCurrentContext();
    ImGuiContext* ctx = ImGui::CreateContext();
    ImGui::SetCurrentContext(ctx);
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.LogFilename = nullptr;
    const Fonts fonts = setup_fonts(17.0f * std::clamp(font_scale, 0.25f, 8.0f));
    ImGui_ImplOpenGL3_Init("#version 330");
    io.DisplaySize = {static_cast<float>(width), static_cast<float>(height)};
    io.DeltaTime = 1.0f / 60;
    ImGui_ImplOpenGL3_NewFrame();
    ImGui::NewFrame();
    {
        // The framebuffer is cleared to white below: no background quad.
        ImGuiCanvas canvas(ImGui::GetBackgroundDrawList(), fonts.mono, false, &fonts.hatch);
        draw(canvas);
    }
    ImGui::Render();
    bind_fbo(GL_FRAMEBUFFER, fbo);
    glViewport(0, 0, width, height);
    glClearColor(1, 1, 1, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    render_draw_data(ImGui::GetDrawData());
    glFinish();
    const auto px = read_pixels(width, height);
    ImGui_ImplOpenGL3_Shutdown();
    ImGui::DestroyContext(ctx);
    ImGui::SetCurrentContext(previous);
    bind_fbo(GL_FRAMEBUFFER, 0);
    del_rbos(1, &rbo);
    del_fbos(1, &fbo);
    glfwDestroyWindow(window);
    if (tight) {
        const PixelBox b = ink_box(width, height, px, 8);
        std::vector<std::uint8_t> crop;
        crop.reserve(static_cast<std::size_t>(b.x1 - b.x0) * static_cast<std::size_t>(b.y1 - b.y0) *
                     4);
        for (int y = b.y0; y < b.y1; ++y)
            crop.insert(
                crop.end(),
                px.begin() + static_cast<std::ptrdiff_t>(
                                 (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) +
                                  static_cast<std::size_t>(b.x0)) *
                                 4),
                px.begin() + static_cast<std::ptrdiff_t>(
                                 (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) +
                                  static_cast<std::size_t>(b.x1)) *
                                 4));
        png = encode_png(b.x1 - b.x0, b.y1 - b.y0, crop, true);
    } else {
        png = encode_png(width, height, px, true);
    }
    if (png.empty()) {
        error = "cannot encode the PNG";
        return GlStatus::Failed;
    }
    return GlStatus::Ok;
}

} // namespace shardscope::render
