#include "render/gui/solid_fill.hpp"

#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GL/glext.h>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui_internal.h>

#include <cmath>
#include <cstdint>
#include <unordered_map>

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
            k = opaque(a) && opaque(b) && opaque(c) ? FillKind::SolidOpaque
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
            return f != nullptr;
        };
        x.ok = get(x.CreateShader, "glCreateShader") & get(x.ShaderSource, "glShaderSource") &
               get(x.CompileShader, "glCompileShader") & get(x.GetShaderiv, "glGetShaderiv") &
               get(x.DeleteShader, "glDeleteShader") & get(x.CreateProgram, "glCreateProgram") &
               get(x.AttachShader, "glAttachShader") &
               get(x.BindAttribLocation, "glBindAttribLocation") &
               get(x.LinkProgram, "glLinkProgram") & get(x.GetProgramiv, "glGetProgramiv") &
               get(x.DeleteProgram, "glDeleteProgram") &
               get(x.GetAttribLocation, "glGetAttribLocation") &
               get(x.GetUniformLocation, "glGetUniformLocation") &
               get(x.GetUniformfv, "glGetUniformfv") &
               get(x.UniformMatrix4fv, "glUniformMatrix4fv") & get(x.UseProgram, "glUseProgram");
        return x;
    }();
    return g;
}

/// The untextured program of one ImGui context (its backend's GL context).
struct SolidProgram {
    GLuint imgui_program = 0; ///< the backend's program it was made to match
    GLint imgui_proj = -1;    ///< ImGui's ProjMtx, read back so both project alike
    GLuint program = 0;       ///< 0: could not be made; draw with ImGui's program
    GLint proj = -1;
    GLFWwindow* gl_context = nullptr;
};

std::unordered_map<ImGuiContext*, SolidProgram>& programs() {
    static std::unordered_map<ImGuiContext*, SolidProgram> p;
    return p;
}

void delete_program(const SolidProgram& p) {
    // Only in the GL context that made it: a name means nothing in another one.
    if (p.program && glfwGetCurrentContext() == p.gl_context) gl().DeleteProgram(p.program);
}

const char* const kVertexShader = R"(#version 330 core
uniform mat4 ProjMtx;
in vec2 Position;
in vec4 Color;
out vec4 Frag_Color;
void main() {
    Frag_Color = Color;
    gl_Position = ProjMtx * vec4(Position.xy, 0, 1);
}
)";

const char* const kFragmentShader = R"(#version 330 core
in vec4 Frag_Color;
layout (location = 0) out vec4 Out_Color;
void main() {
    Out_Color = Frag_Color;
}
)";

GLuint compile(GLenum type, const char* source) {
    const Gl& g = gl();
    const GLuint s = g.CreateShader(type);
    g.ShaderSource(s, 1, &source, nullptr);
    g.CompileShader(s);
    GLint ok = 0;
    g.GetShaderiv(s, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        g.DeleteShader(s);
        return 0;
    }
    return s;
}

/// Makes the program with ImGui's attribute locations, so that it reads the backend's
/// vertex array as it is.
SolidProgram make_program(GLuint imgui_program) {
    SolidProgram p;
    p.imgui_program = imgui_program;
    p.gl_context = glfwGetCurrentContext();
    const Gl& g = gl();
    if (!g.ok) return p;
    p.imgui_proj = g.GetUniformLocation(imgui_program, "ProjMtx");
    const GLint pos = g.GetAttribLocation(imgui_program, "Position");
    const GLint col = g.GetAttribLocation(imgui_program, "Color");
    if (p.imgui_proj < 0 || pos < 0 || col < 0) return p;
    const GLuint vs = compile(GL_VERTEX_SHADER, kVertexShader);
    const GLuint fs = compile(GL_FRAGMENT_SHADER, kFragmentShader);
    if (vs && fs) {
        const GLuint prog = g.CreateProgram();
        g.AttachShader(prog, vs);
        g.AttachShader(prog, fs);
        g.BindAttribLocation(prog, static_cast<GLuint>(pos), "Position");
        g.BindAttribLocation(prog, static_cast<GLuint>(col), "Color");
        g.LinkProgram(prog);
        GLint linked = 0;
        g.GetProgramiv(prog, GL_LINK_STATUS, &linked);
        if (linked) {
            p.program = prog;
            p.proj = g.GetUniformLocation(prog, "ProjMtx");
        } else {
            g.DeleteProgram(prog);
        }
    }
    if (vs) g.DeleteShader(vs);
    if (fs) g.DeleteShader(fs);
    return p;
}

/// The current ImGui context's program, made on first use; forgotten with the context.
const SolidProgram& program_for(GLuint imgui_program) {
    ImGuiContext* ctx = ImGui::GetCurrentContext();
    auto& all = programs();
    auto it = all.find(ctx);
    if (it == all.end()) {
        ImGuiContextHook hook;
        hook.Type = ImGuiContextHookType_Shutdown;
        hook.Callback = [](ImGuiContext* c, ImGuiContextHook*) {
            auto& ps = programs();
            if (auto i = ps.find(c); i != ps.end()) {
                delete_program(i->second);
                ps.erase(i);
            }
        };
        ImGui::AddContextHook(ctx, &hook);
        it = all.emplace(ctx, make_program(imgui_program)).first;
    } else if (it->second.imgui_program != imgui_program) {
        // The backend was shut down and started again: new objects.
        delete_program(it->second);
        it->second = make_program(imgui_program);
    }
    return it->second;
}

void use_solid(const ImDrawList*, const ImDrawCmd* cmd) {
    GLint current = 0;
    glGetIntegerv(GL_CURRENT_PROGRAM, &current);
    const SolidProgram& p = program_for(static_cast<GLuint>(current));
    if (!p.program) return;
    float m[16];
    gl().GetUniformfv(static_cast<GLuint>(current), p.imgui_proj, m);
    gl().UseProgram(p.program);
    gl().UniformMatrix4fv(p.proj, 1, GL_FALSE, m);
    if (static_cast<FillKind>(reinterpret_cast<std::uintptr_t>(cmd->UserCallbackData)) ==
        FillKind::SolidOpaque)
        glDisable(GL_BLEND);
}

} // namespace

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
