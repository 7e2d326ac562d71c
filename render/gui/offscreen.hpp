// OpenGL through GLFW: the window's context and the offscreen framebuffer that PNG pictures
// are rendered into, and PNG encoding (stb_image_write).
#pragma once

#include "render/canvas.hpp"
#include "render/gui/fonts.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

struct GLFWwindow;

namespace shardscope::render {

enum class GlStatus {
    Ok,
    NoDisplay, ///< no X display (DISPLAY unset or unreachable): no GL context possible
    Failed,    ///< a display, but no usable OpenGL 3 context or framebuffer
};

/// Initialises GLFW (once). On failure says why in `error`.
GlStatus init_glfw(std::string& error);

/// A GLFW window with an OpenGL 3.3 core context, current on this thread; invisible for
/// offscreen rendering. Null on failure, with `status` and `error` set.
GLFWwindow* create_gl_window(int width, int height, const char* title, bool visible,
                             GlStatus& status, std::string& error);

/// PNG bytes of RGBA pixels (`bottom_up`: rows as glReadPixels returns them).
std::string encode_png(int width, int height, const std::vector<std::uint8_t>& rgba,
                       bool bottom_up);

/// Reads the bound read framebuffer (width x height, origin bottom-left) as RGBA.
std::vector<std::uint8_t> read_pixels(int width, int height);

/// Draws a picture offscreen: a hidden window's context, an ImGui frame whose background
/// draw list the ImGuiCanvas fills, rendered into a framebuffer object and read back.
/// Returns the PNG bytes in `png`. `font_scale` builds the fonts that much larger (a
/// picture drawn at a larger scale stays crisp); `tight` crops the image to what was drawn
/// (every pixel that is not white) and a margin of 8 px.
GlStatus render_png(int width, int height, const std::function<void(Canvas&)>& draw,
                    std::string& png, std::string& error, float font_scale = 1.0f,
                    bool tight = false);

/// The rectangle [x0, x1) x [y0, y1) of `rgba` (width x height) that holds every pixel that
/// is not white, grown by `margin` (clamped to the image); the whole image when all white.
struct PixelBox {
    int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};
PixelBox ink_box(int width, int height, const std::vector<std::uint8_t>& rgba, int margin);

/// Builds the picture fonts into the current ImGui context (for render_png and the window).
Fonts setup_fonts(float size);

} // namespace shardscope::render
