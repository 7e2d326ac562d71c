#include "render/gui/solid_fill.hpp"
#include "render/gui/per_context.hpp"

#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GL/glext.h>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui_internal.h>

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace shardscope::render {

std::vector<FillRun> fill_runs(const ImDrawVert* vtx, const ImDrawIdx* idx, unsigned count,
                               float white_u, float white_v, float min_pixels) {
    std::vector<FillRun> raw;
    for (unsigned e = 0; e + 2 < count; e += 3) {
        const ImDrawVert& a = vtx[idx[e]];
        const ImDrawVert& b = vtx[idx[e + 1]];
        const ImDrawVert& c = vtx[idx[e + 2]];
        auto white = [&](const ImDrawVert& v) { return v.uv.x == white_u && v.uv.y == white_v; };
        auto opaque = [](const ImDrawVert& v) {
            return (v.col >> IM_COL32_A_SHIFT & 0xFF) == 0xFF;
        };
        FillKind k = FillKind::Textured;
        if (white(a) && white(b) && white(c))
            k = opaque(a) && a.col == b.col && a.col == c.col ? FillKind::SolidOpaque
                                                              : FillKind::SolidBlended;
        const float px = std::abs((b.pos.x - a.pos.x) * (c.pos.y - a.pos.y) -
                                  (c.pos.x - a.pos.x) * (b.pos.y - a.pos.y)) /
                         2;
        if (raw.empty() || raw.back().kind != k) raw.push_back({k, e, 0, 0});
        raw.back().count += 3;
        raw.back().pixels += px;
    }
    std::vector<FillRun> out;
    for (FillRun r : raw) {
        if (r.pixels < min_pixels) r.kind = FillKind::Textured;
        if (!out.empty() && out.back().kind == r.kind) {
            out.back().count += r.count;
            out.back().pixels += r.pixels;
        } else {
            out.push_back(r);
        }
    }
    return out;
}

namespace {

/// GL 2+ entry points, through GLFW (ImGui's backend keeps its loader to itself).
struct Gl {
    PFNGLCREATESHADERPROC CreateShader = nullptr;
    PFNGLSHADERSOURCEPROC ShaderSource = nullptr;
    PFNGLCOMPILESHADERPROC CompileShader = nullptr;
    PFNGLGETSHADERIVPROC GetShaderiv = nullptr;
    PFNGLDELETESHADERPROC DeleteShader = nullptr;
    PFNGLCREATEPROGRAMPROC CreateProgram = nullptr;
    PFNGLATTACHSHADERPROC AttachShader = nullptr;
    PFNGLBINDATTRIBLOCATIONPROC BindAttribLocation = nullptr;
    PFNGLLINKPROGRAMPROC LinkProgram = nullptr;
    PFNGLGETPROGRAMIVPROC GetProgramiv = nullptr;
    PFNGLDELETEPROGRAMPROC DeleteProgram = nullptr;
    PFNGLGETATTRIBLOCATIONPROC GetAttribLocation = nullptr;
    PFNGLGETUNIFORMLOCATIONPROC GetUniformLocation = nullptr;
    PFNGLGETUNIFORMFVPROC GetUniformfv = nullptr;
    PFNGLUNIFORMMATRIX4FVPROC UniformMatrix4fv = nullptr;
    PFNGLUSEPROGRAMPROC UseProgram = nullptr;
    bool ok = false;
};

const Gl& gl() {
    static const Gl g = [] {
        Gl x;
        auto get = [](auto& f, const char* name) {
            f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(glfwGetProcAddress(name));
            return f != nullptr ? 1 : 0; // an int, so that `&` below looks every name up
        };
        x.ok = 1 ==
               (get(x.CreateShader, "glCreateShader") & get(x.ShaderSource, "glShaderSource") &
                get(x.CompileShader, "glCompileShader") & get(x.GetShaderiv, "glGetShaderiv") &
                get(x.DeleteShader, "glDeleteShader") & get(x.CreateProgram, "glCreateProgram") &
                get(x.AttachShader, "glAttachShader") &
                get(x.BindAttribLocation, "glBindAttribLocation") &
                get(x.LinkProgram, "glLinkProgram") & get(x.GetProgramiv, "glGetProgramiv") &
                get(x.DeleteProgram, "glDeleteProgram") &
                get(x.GetAttribLocation, "glGetAttribLocation") &
                get(x.GetUniformLocation, "glGetUniformLocation") &
                get(x.GetUniformfv, "glGetUniformfv") &
                get(x.UniformMatrix4fv, "glUniformMatrix4fv") & get(x.UseProgram, "glUseProgram"));
        return x;
    }();
    return g;
}

/// The untextured programs of one ImGui context (its backend's GL context).
struct SolidPrograms {
    GLuint imgui_program = 0; ///< the backend's program they were made to match
    GLint imgui_proj = -1;    ///< ImGui's ProjMtx, read back so that all project alike
    /// By FillKind: [1] smooth colours, [2] one flat colour per triangle (cheaper to fill for
    /// llvmpipe). 0: could not be made; ImGui's program draws the run.
    GLuint program[3] = {};
    GLint proj[3] = {-1, -1, -1};
    GLFWwindow* gl_context = nullptr;
};

void delete_programs(SolidPrograms& p) {
    // Only in the GL context that made them: a name means nothing in another one.
    if (glfwGetCurrentContext() != p.gl_context) return;
    for (GLuint prog : p.program)
        if (prog) gl().DeleteProgram(prog);
}

// %s: "" or "flat " (the opaque runs: each triangle has one colour, fill_runs checks).
const char* const kVertexShader = R"(#version 330 core
uniform mat4 ProjMtx;
in vec2 Position;
in vec4 Color;
%sout vec4 Frag_Color;
void main() {
    Frag_Color = Color;
    gl_Position = ProjMtx * vec4(Position.xy, 0, 1);
}
)";

const char* const kFragmentShader = R"(#version 330 core
%sin vec4 Frag_Color;
layout (location = 0) out vec4 Out_Color;
void main() {
    Out_Color = Frag_Color;
}
)";

GLuint compile(GLenum type, const char* format, bool flat) {
    char source[512];
    std::snprintf(source, sizeof source, format, flat ? "flat " : "");
    const char* text = source;
    const Gl& g = gl();
    const GLuint s = g.CreateShader(type);
    g.ShaderSource(s, 1, &text, nullptr);
    g.CompileShader(s);
    GLint ok = 0;
    g.GetShaderiv(s, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        g.DeleteShader(s);
        return 0;
    }
    return s;
}

/// One program, with ImGui's attribute locations so that it reads the backend's vertex array
/// as it is; 0 when it does not compile or link.
GLuint link(GLint pos, GLint col, bool flat) {
    const Gl& g = gl();
    const GLuint vs = compile(GL_VERTEX_SHADER, kVertexShader, flat);
    const GLuint fs = compile(GL_FRAGMENT_SHADER, kFragmentShader, flat);
    GLuint prog = 0;
    if (vs && fs) {
        prog = g.CreateProgram();
        g.AttachShader(prog, vs);
        g.AttachShader(prog, fs);
        g.BindAttribLocation(prog, static_cast<GLuint>(pos), "Position");
        g.BindAttribLocation(prog, static_cast<GLuint>(col), "Color");
        g.LinkProgram(prog);
        GLint linked = 0;
        g.GetProgramiv(prog, GL_LINK_STATUS, &linked);
        if (!linked) {
            g.DeleteProgram(prog);
            prog = 0;
        }
    }
    if (vs) g.DeleteShader(vs);
    if (fs) g.DeleteShader(fs);
    return prog;
}

SolidPrograms make_programs(GLuint imgui_program) {
    SolidPrograms p;
    p.imgui_program = imgui_program;
    p.gl_context = glfwGetCurrentContext();
    const Gl& g = gl();
    if (!g.ok) return p;
    p.imgui_proj = g.GetUniformLocation(imgui_program, "ProjMtx");
    const GLint pos = g.GetAttribLocation(imgui_program, "Position");
    const GLint col = g.GetAttribLocation(imgui_program, "Color");
    if (p.imgui_proj < 0 || pos < 0 || col < 0) return p;
    for (FillKind k : {FillKind::SolidBlended, FillKind::SolidOpaque}) {
        const auto i = static_cast<std::size_t>(k);
        p.program[i] = link(pos, col, k == FillKind::SolidOpaque);
        if (p.program[i]) p.proj[i] = g.GetUniformLocation(p.program[i], "ProjMtx");
    }
    return p;
}

/// The current ImGui context's programs, made on first use; forgotten with the context.
const SolidPrograms& programs_for(GLuint imgui_program) {
    auto& p = PerContext<SolidPrograms, delete_programs>::get(
        [&] { return make_programs(imgui_program); });
    if (p.imgui_program != imgui_program) {
        // The backend was shut down and started again: new objects.
        delete_programs(p);
        p = make_programs(imgui_program);
    }
    return p;
}

void use_solid(const ImDrawList*, const ImDrawCmd* cmd) {
    GLint current = 0;
    glGetIntegerv(GL_CURRENT_PROGRAM, &current);
    const SolidPrograms& p = programs_for(static_cast<GLuint>(current));
    const auto kind =
        static_cast<FillKind>(reinterpret_cast<std::uintptr_t>(cmd->UserCallbackData));
    const auto i = static_cast<std::size_t>(kind);
    if (i >= 3 || !p.program[i]) return;
    float m[16];
    gl().GetUniformfv(static_cast<GLuint>(current), p.imgui_proj, m);
    gl().UseProgram(p.program[i]);
    gl().UniformMatrix4fv(p.proj[i], 1, GL_FALSE, m);
    if (kind == FillKind::SolidOpaque) glDisable(GL_BLEND);
}

/// The draw command's texture (the atlas), sampled nearest (`data` set) or linearly again.
void set_sampling(const ImDrawList*, const ImDrawCmd* cmd) {
    const auto filter = cmd->UserCallbackData ? GL_NEAREST : GL_LINEAR;
    glBindTexture(GL_TEXTURE_2D,
                  static_cast<GLuint>(reinterpret_cast<std::intptr_t>(cmd->GetTexID())));
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, filter);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, filter);
}

int g_nearest_tag = 0;

} // namespace

void begin_nearest_sampling(ImDrawList& list) {
    list.AddCallback(set_sampling, &g_nearest_tag);
}

void end_nearest_sampling(ImDrawList& list) {
    list.AddCallback(set_sampling, nullptr);
}

void route_solid_fills(ImDrawList& list, float white_u, float white_v) {
    ImVector<ImDrawCmd> out;
    bool changed = false;
    for (const ImDrawCmd& cmd : list.CmdBuffer) {
        if (cmd.UserCallback || cmd.ElemCount == 0) {
            out.push_back(cmd);
            continue;
        }
        const auto runs = fill_runs(&list.VtxBuffer[static_cast<int>(cmd.VtxOffset)],
                                    &list.IdxBuffer[static_cast<int>(cmd.IdxOffset)], cmd.ElemCount,
                                    white_u, white_v);
        for (const FillRun& r : runs) {
            ImDrawCmd d = cmd;
            d.IdxOffset = cmd.IdxOffset + r.first;
            d.ElemCount = r.count;
            if (r.kind == FillKind::Textured) {
                out.push_back(d);
                continue;
            }
            changed = true;
            ImDrawCmd on = cmd;
            on.ElemCount = 0;
            on.UserCallback = use_solid;
            on.UserCallbackData = reinterpret_cast<void*>(static_cast<std::uintptr_t>(r.kind));
            out.push_back(on);
            out.push_back(d);
            ImDrawCmd off = on;
            off.UserCallback = ImDrawCallback_ResetRenderState;
            off.UserCallbackData = nullptr;
            out.push_back(off);
        }
    }
    if (changed) list.CmdBuffer.swap(out);
}

namespace {
bool g_fast_paths = true;
} // namespace

void set_fast_paths(bool on) {
    g_fast_paths = on;
}

bool fast_paths() {
    return g_fast_paths;
}

void render_draw_data(ImDrawData* data) {
    if (g_fast_paths && data && data->Valid) {
        const ImVec2 white = ImGui::GetIO().Fonts->TexUvWhitePixel;
        for (int i = 0; i < data->CmdListsCount; ++i)
            route_solid_fills(*data->CmdLists[i], white.x, white.y);
    }
    ImGui_ImplOpenGL3_RenderDrawData(data);
}

} // namespace shardscope::render
