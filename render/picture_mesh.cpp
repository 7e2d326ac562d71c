// The mesh picture: every device as a cell, coloured as in the tilings, with coordinates.
#include "render/draw.hpp"
#include "render/palette.hpp"
#include "render/pictures.hpp"
#include "semantics/mesh_coords.hpp"

#include <cmath>
#include <map>

namespace shardscope::render {

void draw_mesh(Canvas& c, const Rect& area, const semantics::Mesh& mesh,
               const std::vector<const semantics::TensorLayout*>& layouts, float font) {
    const float pad = 8, small = font * 0.85f, line = font * 1.35f;
    const auto& axes = mesh.axes;
    const std::int64_t n = mesh.device_count();
    std::string title = "mesh ";
    if (axes.empty()) title += "(one device)";
    for (std::size_t k = 0; k < axes.size(); ++k)
        title += (k ? "×" : "") + std::to_string(axes[k].size);
    std::string names;
    for (const auto& a : axes)
        names += (names.empty() ? "" : ", ") + a.name;
    title += "   axes " + (names.empty() ? std::string("none") : names) + " · " +
             std::to_string(n) + (n == 1 ? " device" : " devices");
    float y = area.y0 + pad;
    text_clipped(c, {area.x0 + pad, y}, colors::kText, title, font * 1.15f, area.width() - 2 * pad);
    y += line * 1.3f;

    // Grid axes: rows = axis rank-2, columns = axis rank-1; leading axes make small multiples.
    const std::size_t rank = axes.size();
    std::int64_t rows = 1, cols = 1, panels = 1;
    bool wrapped = false;
    if (rank == 1) {
        cols = axes[0].size;
        if (cols > 16) {
            wrapped = true;
            cols =
                static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(axes[0].size))));
            rows = (axes[0].size + cols - 1) / cols;
        }
    } else if (rank >= 2) {
        rows = axes[rank - 2].size;
        cols = axes[rank - 1].size;
        for (std::size_t k = 0; k + 2 < rank; ++k)
            panels *= axes[k].size;
    }
    const auto pcols = static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(panels))));
    const std::int64_t prows = (panels + pcols - 1) / pcols;
    std::string axis_note;
    if (rank >= 2)
        axis_note = "rows: axis " + axes[rank - 2].name + "   columns: axis " + axes[rank - 1].name;
    else if (rank == 1)
        axis_note = "axis " + axes[0].name + (wrapped ? " (wrapped into rows)" : "");
    if (panels > 1) {
        axis_note += "   panels: axis";
        for (std::size_t k = 0; k + 2 < rank; ++k)
            axis_note += " " + axes[k].name;
    }
    if (!axis_note.empty()) {
        text_clipped(c, {area.x0 + pad, y}, colors::kMuted, axis_note, small,
                     area.width() - 2 * pad);
        y += line;
    }
    const float gap = panels > 1 ? font * 1.6f : 0;
    const float avail_w = area.width() - 2 * pad, avail_h = area.y1 - pad - y;
    const float pw = (avail_w - gap * static_cast<float>(pcols - 1)) / static_cast<float>(pcols);
    const float ph = (avail_h - gap * static_cast<float>(prows - 1)) / static_cast<float>(prows) -
                     (panels > 1 ? line : 0);
    float cell = std::min(pw / static_cast<float>(cols), ph / static_cast<float>(rows));
    cell = std::min(cell, font * (120.0f / 14.0f)); // 120 px at the default font
    if (cell < 2) {
        const std::string why = std::to_string(n) +
                                " devices are too many to draw a cell each in " +
                                std::to_string(static_cast<int>(area.width())) + "×" +
                                std::to_string(static_cast<int>(area.height())) + " pixels";
        c.text({area.x0 + pad, y}, colors::kError, why, font);
        c.report_problem(why);
        return;
    }
    const float cgap = cell > 12 ? 2 : 0;

    auto holdings = [&](std::int64_t id, const std::vector<int>& coords) {
        std::string tip = "device " + device_text(id, coords);
        for (const auto* t : layouts)
            tip += "\n" + t->tensor + ": " + device_holding_text(mesh, *t, coords);
        return tip;
    };

    std::vector<std::int64_t> sizes;
    for (const auto& a : axes)
        sizes.push_back(a.size);
    std::vector<int> coords(rank, 0);
    for (std::int64_t p = 0; p < std::max<std::int64_t>(n, 1); ++p) {
        semantics::row_major_coords(sizes, p, coords);
        std::int64_t panel = 0, r = 0, col = 0;
        if (rank == 1) {
            r = wrapped ? p / cols : 0;
            col = wrapped ? p % cols : p;
        } else if (rank >= 2) {
            r = coords[rank - 2];
            col = coords[rank - 1];
            for (std::size_t k = 0; k + 2 < rank; ++k)
                panel = panel * axes[k].size + coords[k];
        }
        const float px = area.x0 + pad + static_cast<float>(panel % pcols) * (pw + gap);
        const float py = y +
                         static_cast<float>(panel / pcols) * (ph + gap + (panels > 1 ? line : 0)) +
                         (panels > 1 ? line : 0);
        if (panels > 1 && r == 0 && col == 0) {
            std::string label;
            for (std::size_t k = 0; k + 2 < rank; ++k)
                label +=
                    (label.empty() ? "" : ", ") + axes[k].name + "=" + std::to_string(coords[k]);
            c.text({px, py - line}, colors::kMuted, label, small);
        }
        const Rect cellr{px + static_cast<float>(col) * cell, py + static_cast<float>(r) * cell,
                         px + static_cast<float>(col + 1) * cell - cgap,
                         py + static_cast<float>(r + 1) * cell - cgap};
        const std::int64_t id =
            mesh.devices.empty() ? p : mesh.devices.at(static_cast<std::size_t>(p));
        const Color col_c = mesh_device_color(sizes, coords, id);
        c.fill_rect(cellr, col_c);
        if (c.hovered(cellr)) {
            c.stroke_rect(cellr, colors::kText, 3);
            c.hover_device(id);
        }
        if (cell > font * 2.2f) {
            const Color fg = text_on(col_c);
            std::string cs = "(";
            for (std::size_t k = 0; k < rank; ++k)
                cs += (k ? "," : "") + std::to_string(coords[k]);
            cs += ")";
            const bool two = cell > font * 3.2f;
            if (two) {
                text_centered(c, {cellr.x0, cellr.y0, cellr.x1, cellr.center().y + font * 0.3f},
                              "d" + std::to_string(id), fg, font);
                text_centered(c, {cellr.x0, cellr.center().y, cellr.x1, cellr.y1}, cs, fg, small);
            } else {
                text_centered(c, cellr, "d" + std::to_string(id), fg, small);
            }
        }
        if (c.wants_tip(cellr)) c.tip(cellr, holdings(id, coords));
    }
}

} // namespace shardscope::render
