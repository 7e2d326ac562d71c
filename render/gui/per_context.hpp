// State kept per ImGui context, such as GL objects made for its backend's GL context, and
// dropped when the context is destroyed (render_png makes and destroys one per picture).
#pragma once

#include <imgui_internal.h>

#include <unordered_map>

namespace shardscope::render {

/// One T per ImGui context; `Drop` runs on it when its context is destroyed.
template <class T, void (*Drop)(T&)>
struct PerContext {
    /// The current context's T, made by `make()` on its first use.
    template <class Make>
    static T& get(Make make) {
        ImGuiContext* ctx = ImGui::GetCurrentContext();
        auto& all = entries();
        if (auto it = all.find(ctx); it != all.end()) return it->second;
        ImGuiContextHook hook;
        hook.Type = ImGuiContextHookType_Shutdown;
        hook.Callback = [](ImGuiContext* c, ImGuiContextHook*) {
            auto& es = entries();
            if (auto i = es.find(c); i != es.end()) {
                Drop(i->second);
                es.erase(i);
            }
        };
        ImGui::AddContextHook(ctx, &hook);
        return all.emplace(ctx, make()).first->second;
    }

private:
    static std::unordered_map<ImGuiContext*, T>& entries() {
        static std::unordered_map<ImGuiContext*, T> e;
        return e;
    }
};

} // namespace shardscope::render
