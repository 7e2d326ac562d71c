#include "render/gui/fill_image.hpp"
#include "render/gui/per_context.hpp"

#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GL/glext.h>
#include <GLFW/glfw3.h>
#include <imgui_internal.h>

#include <algorithm>
#include <cmath>

namespace shardscope::render {

namespace {

/// The first pixel whose centre is at or after `x` (GL: a centre on a left or top edge is in).
int first_pixel(float x) {
    return static_cast<int>(std::ceil(x - 0.5f));
}

} // namespace

FillImage paint_fills(const std::vector<PendingFill>& fills, const Rect& clip) {
    FillImage img;
    int x0 = first_pixel(clip.x1), y0 = first_pixel(clip.y1);
    int x1 = first_pixel(clip.x0), y1 = first_pixel(clip.y0);
    for (const auto& f : fills) {
        x0 = std::min(x0, first_pixel(f.r.x0));
        y0 = std::min(y0, first_pixel(f.r.y0));
        x1 = std::max(x1, first_pixel(f.r.x1));
        y1 = std::max(y1, first_pixel(f.r.y1));
    }
    x0 = std::max(x0, first_pixel(clip.x0));
    y0 = std::max(y0, first_pixel(clip.y0));
    x1 = std::min(x1, first_pixel(clip.x1));
    y1 = std::min(y1, first_pixel(clip.y1));
    if (x1 <= x0 || y1 <= y0) return img;
    img.x0 = x0;
    img.y0 = y0;
    img.w = x1 - x0;
    img.h = y1 - y0;
    img.px.assign(static_cast<std::size_t>(img.w) * static_cast<std::size_t>(img.h), 0);
    for (const auto& f : fills) {
        const int a = std::max(first_pixel(f.r.x0), x0) - x0;
        const int b = std::min(first_pixel(f.r.x1), x1) - x0;
        const int c = std::max(first_pixel(f.r.y0), y0) - y0;
        const int d = std::min(first_pixel(f.r.y1), y1) - y0;
        for (int y = c; y < d; ++y) {
            auto* row =
                img.px.data() + static_cast<std::size_t>(y) * static_cast<std::size_t>(img.w);
            std::fill(row + std::max(a, 0), row + std::max(b, a), f.abgr);
        }
    }
    return img;
}

namespace {

/// The image textures of one ImGui context: used in order within a frame, again the next.
struct TexturePool {
    std::vector<GLuint> textures;
    std::vector<std::pair<int, int>> sizes;
    std::size_t used = 0;
    int frame = -1;
    GLFWwindow* gl_context = nullptr;
};

void delete_textures(TexturePool& p) {
    // Only in the GL context that made them: a name means nothing in another one.
    if (!p.textures.empty() && glfwGetCurrentContext() == p.gl_context)
        glDeleteTextures(static_cast<GLsizei>(p.textures.size()), p.textures.data());
}

TexturePool& pool() {
    return PerContext<TexturePool, delete_textures>::get([] {
        TexturePool p;
        p.gl_context = glfwGetCurrentContext();
        return p;
    });
}

} // namespace

void* frame_texture(const FillImage& image) {
    if (!glfwGetCurrentContext() || image.w <= 0 || image.h <= 0) return nullptr;
    TexturePool& p = pool();
    if (p.gl_context != glfwGetCurrentContext()) return nullptr;
    if (p.frame != ImGui::GetFrameCount()) {
        p.frame = ImGui::GetFrameCount();
        p.used = 0;
    }
    if (p.used == p.textures.size()) {
        GLuint t = 0;
        glGenTextures(1, &t);
        glBindTexture(GL_TEXTURE_2D, t);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
        p.textures.push_back(t);
        p.sizes.emplace_back(0, 0);
    }
    const GLuint t = p.textures[p.used];
    auto& size = p.sizes[p.used];
    ++p.used;
    GLint bound = 0;
    glGetIntegerv(GL_TEXTURE_BINDING_2D, &bound);
    glBindTexture(GL_TEXTURE_2D, t);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
    if (size != std::pair{image.w, image.h}) {
        glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, image.w, image.h, 0, GL_RGBA, GL_UNSIGNED_BYTE,
                     image.px.data());
        size = {image.w, image.h};
    } else {
        glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, image.w, image.h, GL_RGBA, GL_UNSIGNED_BYTE,
                        image.px.data());
    }
    glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(bound));
    return reinterpret_cast<void*>(static_cast<std::intptr_t>(t));
}

} // namespace shardscope::render
