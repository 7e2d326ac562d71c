// The totals panel: the whole program per device and per step (semantics/totals.hpp): step
// time and its breakdown, bytes per collective kind, FLOPs and MFU, and peak memory as one
// bar of its parts against the preset's HBM.
#include "render/gui/view.hpp"

#include "semantics/report.hpp"

#include <imgui.h>

#include <algorithm>
#include <string>

namespace shardscope::render {

namespace {

/// The memory bar's colours, one per part (tests/gui count them in screenshots).
constexpr ImU32 kWeights = IM_COL32(52, 120, 198, 255);
constexpr ImU32 kGradients = IM_COL32(232, 142, 36, 255);
constexpr ImU32 kOptimizer = IM_COL32(142, 84, 196, 255);
constexpr ImU32 kActivations = IM_COL32(46, 168, 98, 255);
constexpr ImU32 kBuffers = IM_COL32(206, 186, 40, 255);
constexpr ImU32 kHbm = IM_COL32(220, 40, 40, 255);

void row(const char* name, const std::string& value, const char* note = "") {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(name);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(value.c_str());
    ImGui::TableNextColumn();
    ImGui::TextDisabled("%s", note);
}

} // namespace

void MainView::totals_panel(const ViewInput& in) {
    if (in.totals == nullptr || in.plan->statements.empty()) {
        ImGui::TextDisabled("no statement");
        return;
    }
    using semantics::format_bytes;
    using semantics::format_seconds;
    const auto& t = *in.totals;
    ImGui::BeginChild("totals", {0, 0}, false);
    ImGui::Text("Program totals per device and step: %lld devices, %s, %s",
                static_cast<long long>(t.devices), t.hardware.c_str(),
                t.training ? "training" : "inference (no train line)");
    if (t.backward_derived)
        ImGui::TextDisabled("the forward as written + the backward grad derives (the file has "
                            "no backward)");
    const auto& pp = t.pipeline;
    if (ImGui::BeginTable("time", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
        row("step time", format_seconds(t.step_s),
            pp.pipelined ? "compute + exposed communication + pipeline bubble"
                         : "compute + exposed communication");
        // One pipeline: its row. Several (t.pipeline then sums their bubbles): the sum, then
        // each pipeline with its own stages, micro-batches and schedule.
        const auto schedule = [](const semantics::PipelineTotals& p) {
            char what[160];
            std::snprintf(what, sizeof what,
                          "%s: %lld stages x %lld layers, %lld micro-batches, %s; %.1f%% idle",
                          p.axis.c_str(), static_cast<long long>(p.stages),
                          static_cast<long long>(p.layers_per_stage),
                          static_cast<long long>(p.microbatches), p.schedule.c_str(),
                          100 * p.bubble_fraction);
            return std::string(what);
        };
        if (pp.pipelined && t.pipelines.size() <= 1)
            row("pipeline bubble", format_seconds(pp.bubble_s), schedule(pp).c_str());
        if (pp.pipelined && t.pipelines.size() > 1) {
            row("pipeline bubble", format_seconds(pp.bubble_s),
                (std::to_string(t.pipelines.size()) + " pipelines, their bubbles added").c_str());
            for (std::size_t k = 0; k < t.pipelines.size(); ++k)
                row(("  pipeline " + std::to_string(k + 1)).c_str(),
                    format_seconds(t.pipelines[k].bubble_s), schedule(t.pipelines[k]).c_str());
        }
        row("compute", format_seconds(t.compute_s),
            t.recompute_s > 0 ? "includes the recomputed forward" : "");
        if (t.recompute_s > 0) row("recompute", format_seconds(t.recompute_s));
        row("exposed communication", format_seconds(t.exposed_s),
            "collectives hide only behind compute that does not need them");
        row("communication", format_seconds(t.comm_s), "all of it");
        row("no overlap", format_seconds(t.serial_s), "compute + communication");
        for (const auto& k : t.bytes_by_kind)
            row(std::string(semantics::step_kind_name(k.kind)).c_str(),
                format_bytes(k.bytes) + " sent (" + std::to_string(k.count) + "x)");
        if (t.bytes_by_kind.empty()) row("traffic", "none");
        char mfu[64];
        std::snprintf(mfu, sizeof mfu, "MFU %.1f%% of %s/s", 100 * t.mfu,
                      semantics::format_flops(t.peak_flops).c_str());
        row("FLOPs", semantics::format_flops(t.flops), mfu);
        ImGui::EndTable();
    }
    const auto& m = t.memory;
    ImGui::Spacing();
    ImGui::Text("Peak memory %s of %s HBM", format_bytes(m.total()).c_str(),
                format_bytes(t.hbm_bytes).c_str());
    ImGui::SameLine();
    if (t.fits)
        ImGui::TextColored({0.16f, 0.63f, 0.24f, 1}, "fits");
    else
        ImGui::TextColored({0.86f, 0.16f, 0.16f, 1}, "does NOT fit");
    // The bar: the parts left to right on a scale of max(total, HBM); a red mark at the HBM.
    const float width = std::max(ImGui::GetContentRegionAvail().x, 50.0f);
    const float height = font_size() * 1.6f;
    const ImVec2 at = ImGui::GetCursorScreenPos();
    auto* dl = ImGui::GetWindowDrawList();
    const double scale = std::max(m.total(), t.hbm_bytes);
    struct Part {
        const char* name;
        double bytes;
        ImU32 colour;
    };
    const Part parts[] = {{"weights", m.weights, kWeights},
                          {"gradients", m.gradients, kGradients},
                          {"optimizer", m.optimizer, kOptimizer},
                          {"activations", m.activations, kActivations},
                          {"buffers", m.buffers, kBuffers}};
    dl->AddRect(at, {at.x + width, at.y + height}, IM_COL32(128, 128, 128, 255));
    float x = at.x;
    for (const auto& p : parts) {
        if (scale <= 0 || p.bytes <= 0) continue;
        const float w = static_cast<float>(p.bytes / scale) * width;
        dl->AddRectFilled({x, at.y}, {x + w, at.y + height}, p.colour);
        x += w;
    }
    if (scale > 0) {
        const float hx = at.x + static_cast<float>(t.hbm_bytes / scale) * width;
        dl->AddRectFilled({hx - 2, at.y - 3}, {hx + 1, at.y + height + 3}, kHbm);
    }
    ImGui::Dummy({width, height + 4});
    for (const auto& p : parts) {
        if (p.bytes <= 0 && (!t.training && (p.colour == kGradients || p.colour == kOptimizer)))
            continue;
        const ImVec2 c = ImGui::GetCursorScreenPos();
        const float s = ImGui::GetTextLineHeight();
        dl->AddRectFilled({c.x, c.y + 2}, {c.x + s - 4, c.y + s - 2}, p.colour);
        ImGui::Dummy({s, s});
        ImGui::SameLine();
        ImGui::Text("%s %s", p.name, format_bytes(p.bytes).c_str());
    }
    ImGui::EndChild();
}

} // namespace shardscope::render
