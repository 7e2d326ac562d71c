// The compare panel: the strategy search (semantics/search.hpp) of the open file over a device
// count, run by the app on a worker thread, its progress, and the top candidates side by side
// (mesh, step time, compute, exposed communication, memory, HBM fit) with the best
// highlighted and why each other loses. Clicking a candidate shows its plan: the app re-checks
// the file at that mesh.
#include "render/gui/view.hpp"

#include "semantics/report.hpp"

#include <imgui.h>

#include <algorithm>
#include <filesystem>
#include <string>

namespace shardscope::render {

namespace {

/// A row's figures, one cell each: step time, compute, exposed communication, memory, fits.
template <class Row>
void figure_cells(const Row& r) {
    using semantics::format_bytes;
    using semantics::format_seconds;
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_seconds(r.step_s).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_seconds(r.compute_s).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_seconds(r.exposed_s).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_bytes(r.memory_bytes).c_str());
    ImGui::TableNextColumn();
    if (r.fits)
        ImGui::TextColored({0.16f, 0.55f, 0.24f, 1}, "yes");
    else
        ImGui::TextColored({0.86f, 0.16f, 0.16f, 1}, "NO");
}

/// The best row's background and the shown row's (tests/gui count them in screenshots).
constexpr ImU32 kBestRow = IM_COL32(200, 236, 200, 255);
constexpr ImU32 kShownRow = IM_COL32(252, 228, 160, 255);

/// A file's name without its folder (the full path is the row's tooltip).
std::string base_name(const std::string& path) {
    return std::filesystem::path(path).filename().string();
}

} // namespace

std::vector<CompareRow> compare_rows(const semantics::SearchResult& result, double hbm_bytes,
                                     std::size_t top) {
    std::vector<const semantics::Candidate*> order;
    for (const auto& c : result.ranked)
        order.push_back(&c);
    auto fits = [&](const semantics::Candidate* c) {
        return hbm_bytes <= 0 || c->cost.memory_bytes_per_device <= hbm_bytes;
    };
    std::stable_partition(order.begin(), order.end(), fits);
    if (order.size() > top) order.resize(top);
    std::vector<CompareRow> rows;
    for (std::size_t k = 0; k < order.size(); ++k) {
        const auto& c = *order[k];
        CompareRow r;
        r.rank = static_cast<int>(k + 1);
        r.mesh = c.mesh_text;
        for (std::size_t a = 0; a < c.sizes.size() && a < result.axis_names.size(); ++a)
            r.mesh_spec += (a ? "," : "") + result.axis_names[a] + "=" + std::to_string(c.sizes[a]);
        r.step_s = c.cost.time_s;
        r.compute_s = c.cost.compute_s;
        r.exposed_s = c.cost.exposed_s;
        r.comm_s = c.cost.comm_s;
        r.memory_bytes = c.cost.memory_bytes_per_device;
        r.fits = fits(&c);
        r.equivalents = c.equivalents;
        if (k > 0) {
            const auto& best = *order.front();
            r.why = fits(&best) && !r.fits ? semantics::explain_no_fit(r.memory_bytes, hbm_bytes)
                                           : semantics::explain_loss(c, best);
        }
        rows.push_back(std::move(r));
    }
    return rows;
}

void MainView::compare_panel(const ViewInput& in, ViewActions& out) {
    using semantics::format_bytes;
    using semantics::format_seconds;
    const CompareState& s = *in.compare;
    const Script& script = in.script ? *in.script : Script{};
    if (!s.files.empty()) {
        // gui --compare: the files as `check --compare` ranks them; a click opens one.
        ImGui::Text("Files compared (%zu), per device and step; the open one is amber:",
                    s.files.size());
        if (!s.files_note.empty()) {
            ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(170, 100, 0, 255));
            ImGui::TextWrapped("%s", s.files_note.c_str());
            ImGui::PopStyleColor();
        }
        if (ImGui::BeginTable("files", 8,
                              ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit |
                                  ImGuiTableFlags_BordersInnerV)) {
            for (const char* h : {"#", "file", "mesh", "step time", "compute", "exposed comm.",
                                  "memory/device", "fits"})
                ImGui::TableSetupColumn(h);
            ImGui::TableHeadersRow();
            int index = 0;
            for (const auto& r : s.files) {
                ++index;
                ImGui::TableNextRow();
                if (r.rank == 1) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, kBestRow);
                if (r.file == in.file) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, kShownRow);
                ImGui::TableNextColumn();
                const std::string label =
                    (r.rank == 0 ? std::string("-") : "#" + std::to_string(r.rank)) +
                    (r.rank == 1 ? " best" : "") + "##file" + std::to_string(index);
                if ((ImGui::Selectable(label.c_str(), false, ImGuiSelectableFlags_SpanAllColumns) ||
                     script.pick_file == index) &&
                    r.file != in.file)
                    ask_open(in, r.file, false, out);
                if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", r.file.c_str());
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(base_name(r.file).c_str());
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(r.mesh.c_str());
                if (r.rank == 0) {
                    ImGui::TableNextColumn();
                    ImGui::TextColored({0.86f, 0.16f, 0.16f, 1}, "%d %s: not ranked", r.errors,
                                       r.errors == 1 ? "error" : "errors");
                    continue;
                }
                figure_cells(r);
            }
            ImGui::EndTable();
        }
        for (const auto& r : s.files)
            if (r.rank > 1)
                ImGui::TextWrapped("#%d %s: %s", r.rank, base_name(r.file).c_str(), r.why.c_str());
        ImGui::Separator();
    }
    if (search_devices_ <= 0) search_devices_ = static_cast<int>(in.plan->mesh.device_count());
    ImGui::TextUnformatted("Strategy search over");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(font_size() * 7);
    ImGui::InputInt("devices##search", &search_devices_, 0, 0);
    search_devices_ = std::clamp(search_devices_, 1, 1 << 24);
    if (script.search_devices > 0) search_devices_ = static_cast<int>(script.search_devices);
    ImGui::SameLine();
    if (s.running) ImGui::BeginDisabled();
    if (ImGui::Button("Search") || (script.search_devices > 0 && !s.running))
        out.run_search = search_devices_;
    if (s.running) ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::TextDisabled("sizes the file's mesh axes, ranks by step time");
    if (s.running) {
        const float frac =
            s.total ? static_cast<float>(s.checked) / static_cast<float>(s.total) : 0.0f;
        const std::string label = s.total ? std::to_string(s.checked) + " / " +
                                                std::to_string(s.total) + " meshes checked"
                                          : std::string("searching: enumerating the meshes");
        ImGui::ProgressBar(frac, {-1, 0}, label.c_str());
    }
    if (!s.error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(220, 40, 40, 255));
        ImGui::TextWrapped("%s", s.error.c_str());
        ImGui::PopStyleColor();
    }
    if (!s.summary.empty())
        ImGui::TextWrapped("%s (%.2f s); %s, HBM %s per device", s.summary.c_str(), s.seconds,
                           s.hardware.c_str(), format_bytes(s.hbm_bytes).c_str());
    if (!s.shown_mesh.empty()) {
        // Which candidate the other panels draw, and why it loses (the row's own line).
        const CompareRow* shown = nullptr;
        for (const auto& r : s.rows)
            if (r.rank == s.shown_rank) shown = &r;
        if (ImGui::Button("Back to the written mesh")) out.show_written = true;
        ImGui::SameLine();
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(30, 80, 170, 255));
        std::string line = "The other panels show candidate #" + std::to_string(s.shown_rank) +
                           " (" + (shown ? shown->mesh : s.shown_mesh) +
                           "): the file re-checked at that mesh; its expect lines describe the "
                           "mesh as written, so they may fail here.";
        if (shown && shown->rank > 1) line += " It loses to #1: " + shown->why;
        if (shown && shown->rank == 1) line += " It is the best.";
        ImGui::TextWrapped("%s", line.c_str());
        ImGui::PopStyleColor();
    }
    if (s.rows.empty()) {
        if (s.finished && s.error.empty()) ImGui::TextDisabled("no candidate is left");
        return;
    }
    const bool merged = std::any_of(s.rows.begin(), s.rows.end(),
                                    [](const CompareRow& r) { return r.equivalents > 1; });
    ImGui::BeginChild("compare", {0, 0}, false);
    if (ImGui::BeginTable("candidates", merged ? 8 : 7,
                          ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit |
                              ImGuiTableFlags_BordersInnerV)) {
        ImGui::TableSetupColumn("#");
        ImGui::TableSetupColumn("mesh");
        ImGui::TableSetupColumn("step time");
        ImGui::TableSetupColumn("compute");
        ImGui::TableSetupColumn("exposed comm.");
        ImGui::TableSetupColumn("memory/device");
        ImGui::TableSetupColumn("fits");
        if (merged) ImGui::TableSetupColumn("same-cost meshes");
        ImGui::TableHeadersRow();
        for (const auto& r : s.rows) {
            ImGui::TableNextRow();
            const bool shown = r.rank == s.shown_rank && !s.shown_mesh.empty();
            if (r.rank == 1) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, kBestRow);
            if (shown) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, kShownRow);
            ImGui::TableNextColumn();
            const std::string label = "#" + std::to_string(r.rank) + (r.rank == 1 ? " best" : "") +
                                      "##row" + std::to_string(r.rank);
            if (ImGui::Selectable(label.c_str(), false, ImGuiSelectableFlags_SpanAllColumns) ||
                script.pick_candidate == r.rank) {
                out.show_mesh = r.mesh_spec;
                out.show_rank = r.rank;
            }
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(r.mesh.c_str());
            figure_cells(r);
            if (merged) {
                ImGui::TableNextColumn();
                ImGui::Text("%zu", r.equivalents);
            }
        }
        ImGui::EndTable();
    }
    ImGui::Spacing();
    ImGui::TextDisabled("Click a candidate to see its plan in the other panels. Why each loses "
                        "to #1:");
    for (const auto& r : s.rows)
        if (r.rank > 1) ImGui::TextWrapped("#%d %s: %s", r.rank, r.mesh.c_str(), r.why.c_str());
    ImGui::EndChild();
}

} // namespace shardscope::render
