// The tiling picture: a layout cut into tiles, each coloured by the devices that hold it.
#include "render/draw.hpp"
#include "render/palette.hpp"
#include "render/pictures.hpp"
#include "render/timeline.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>

namespace shardscope::render {

namespace {

/// Spans along one drawn dimension: proportional to the pieces' sizes, at least 3 px each.
std::vector<Span> cut_spans(const std::optional<TileDim>& dim, float length) {
    std::vector<double> sizes;
    if (!dim) {
        sizes.push_back(1);
    } else {
        for (const auto& r : dim->cuts)
            sizes.push_back(static_cast<double>(std::max<std::int64_t>(r.size(), 0)));
    }
    return timeline_spans(sizes, length, std::min(3.0f, length / static_cast<float>(sizes.size())));
}

std::string holders_label(const std::vector<std::int64_t>& h) {
    if (h.empty()) return "—";
    if (h.size() <= 4) {
        std::string out;
        for (auto d : h)
            out += (out.empty() ? "d" : " d") + std::to_string(d);
        return out;
    }
    return "d" + std::to_string(h.front()) + "…d" + std::to_string(h.back()) + " ×" +
           std::to_string(h.size());
}

std::string dim_text(const TileDim& d) {
    std::string out = d.index + " (" + std::to_string(d.extent) + ", " +
                      std::to_string(d.cuts.size()) + (d.cuts.size() == 1 ? " piece" : " pieces");
    if (d.folded) {
        std::string f;
        for (const auto& a : d.folded_atoms)
            f += (f.empty() ? "" : " ") + a;
        out += ", shards of " + f + " folded";
    }
    return out + ")";
}

} // namespace

std::shared_ptr<const TileModel>
cached_tile_model(const semantics::Mesh& mesh, const semantics::TensorLayout& layout, Drawn drawn) {
    struct Entry {
        semantics::Mesh mesh;
        semantics::TensorLayout layout;
        Drawn drawn;
        std::shared_ptr<const TileModel> model;
    };
    constexpr std::size_t kEntries = 8;
    thread_local std::vector<Entry> cache; // the most recently used first
    for (auto it = cache.begin(); it != cache.end(); ++it)
        if (it->drawn.row == drawn.row && it->drawn.col == drawn.col && it->layout == layout &&
            it->mesh == mesh) {
            std::rotate(cache.begin(), it, it + 1);
            return cache.front().model;
        }
    auto model = std::make_shared<const TileModel>(tile_model(mesh, layout, drawn));
    if (cache.size() == kEntries) cache.pop_back();
    cache.insert(cache.begin(), Entry{mesh, layout, drawn, model});
    return model;
}

void draw_tiling(Canvas& c, const Rect& area, const semantics::Mesh& mesh,
                 const semantics::TensorLayout& layout, Drawn drawn, float font) {
    std::shared_ptr<const TileModel> model;
    try {
        model = cached_tile_model(mesh, layout, drawn);
    } catch (const std::exception& e) {
        std::string_view why = e.what();
        if (why.starts_with("tile_model: ")) why.remove_prefix(12);
        c.text({area.x0 + 8, area.y0 + 8}, colors::kError, why, font);
        c.report_problem(why);
        return;
    }
    const TileModel& m = *model;
    const float pad = 8, small = font * 0.85f, line = font * 1.35f;
    const float maxw = area.width() - 2 * pad;
    float y = area.y0 + pad;
    // Header: name, placements, shapes.
    std::string placements;
    for (const auto& p : layout.placements)
        placements += (placements.empty() ? "" : ", ") + p.text();
    std::string idx;
    for (const auto& i : layout.indices)
        idx += (idx.empty() ? "" : " ") + i;
    text_clipped(c, {area.x0 + pad, y}, colors::kText,
                 layout.tensor + "_{" + idx + "}   (" +
                     (placements.empty() ? "scalar mesh" : placements) + ")",
                 font * 1.15f, maxw);
    y += line * 1.15f;
    text_clipped(c, {area.x0 + pad, y}, colors::kMuted,
                 "global " + shape_text(layout.global_shape) + " · local " +
                     shape_text(layout.local_shape) + " per device",
                 small, maxw);
    y += line;
    std::string dims;
    if (m.row) dims += "rows: " + dim_text(*m.row);
    if (m.col) dims += (dims.empty() ? "" : "   ") + std::string("columns: ") + dim_text(*m.col);
    if (!dims.empty()) {
        text_clipped(c, {area.x0 + pad, y}, colors::kMuted, dims, small, maxw);
        y += line;
    }
    if (!m.others.empty()) {
        std::string o = "not drawn:";
        for (const auto& d : m.others) {
            o += " " + d.index + " (" + std::to_string(d.extent);
            if (d.shards > 1) {
                std::string axes;
                for (const auto& a : d.axes)
                    axes += (axes.empty() ? "" : ",") + a;
                o += ", " + std::to_string(d.shards) + " shards over " + axes;
            }
            o += ")";
        }
        text_clipped(c, {area.x0 + pad, y}, colors::kMuted, o, small, maxw);
        y += line;
    }
    if (!m.partial.empty()) {
        std::string p = "Σ partial over mesh axis";
        for (const auto& a : m.partial)
            p += " " + a.name + " (" + a.reduce + ")";
        p += ": every holder has a part still to be reduced";
        text_clipped(c, {area.x0 + pad, y}, colors::kText, p, small, maxw);
        y += line;
    }

    // Legend of the devices (up to 64), at the bottom.
    const std::int64_t n = mesh.device_count();
    float legend_h = 0;
    const bool legend = n <= 64;
    const float sw = small;
    float cell_w = 0;
    int per_row = 1;
    if (legend) {
        std::size_t longest = 0;
        for (const auto& d : m.devices)
            longest = std::max(longest, device_text(d.device, d.coords).size());
        cell_w = sw + 6 + c.text_size(std::string(longest, '0'), small).x + 14;
        per_row = std::max(1, static_cast<int>(maxw / cell_w));
        const int rows = (static_cast<int>(m.devices.size()) + per_row - 1) / per_row;
        legend_h = static_cast<float>(rows) * line + pad;
    }

    // The grid, with room for the row and column labels.
    const float label_w = m.row ? c.text_size("0000:0000", small).x + 6 : 0;
    const float label_h = m.col ? line : 0;
    Rect grid{area.x0 + pad + label_w, y + label_h, area.x1 - pad, area.y1 - pad - legend_h};
    if (grid.width() < 20 || grid.height() < 20) return;
    // Keep the grid from turning into a sliver: at most 3:1 either way.
    if (grid.width() > 3 * grid.height()) grid.x1 = grid.x0 + 3 * grid.height();
    if (grid.height() > 3 * grid.width()) grid.y1 = grid.y0 + 3 * grid.width();
    const auto xs = cut_spans(m.col, grid.width());
    const auto ys = cut_spans(m.row, grid.height());
    const bool partial = !m.partial.empty();
    for (const auto& t : m.tiles) {
        const auto& xsp = xs[static_cast<std::size_t>(t.col)];
        const auto& ysp = ys[static_cast<std::size_t>(t.row)];
        const Rect r{grid.x0 + xsp.x0, grid.y0 + ysp.x0, grid.x0 + xsp.x1, grid.y0 + ysp.x1};
        // One stripe per holder, as many as fit 2 px each.
        const auto& h = t.holders;
        if (h.empty()) {
            c.fill_rect(r, {235, 235, 235, 255});
        } else {
            const std::size_t fit =
                std::max<std::size_t>(1, static_cast<std::size_t>(r.width() / 2));
            const std::size_t k = std::min(h.size(), fit);
            for (std::size_t i = 0; i < k; ++i) {
                const float x0 = r.x0 + r.width() * static_cast<float>(i) / static_cast<float>(k);
                const float x1 =
                    r.x0 + r.width() * static_cast<float>(i + 1) / static_cast<float>(k);
                c.fill_rect({x0, r.y0, x1, r.y1}, device_color(h[i], n));
            }
        }
    }
    // Partial: every tile holds a part of the sum, so the whole grid is hatched at once.
    if (partial) hatch(c, grid, colors::kHatch, std::max(6.0f, font * 0.6f));
    // The cuts as lines across the grid (one per cut, not an outline per tile: software GL
    // pays per triangle, and a 32x32 tiling would have 1024 outlines).
    for (std::size_t i = 1; i < xs.size(); ++i)
        c.line({grid.x0 + xs[i].x0, grid.y0}, {grid.x0 + xs[i].x0, grid.y1}, colors::kGrid, 1);
    for (std::size_t i = 1; i < ys.size(); ++i)
        c.line({grid.x0, grid.y0 + ys[i].x0}, {grid.x1, grid.y0 + ys[i].x0}, colors::kGrid, 1);
    c.stroke_rect(grid, colors::kGrid, 2);
    for (const auto& t : m.tiles) {
        const auto& xsp = xs[static_cast<std::size_t>(t.col)];
        const auto& ysp = ys[static_cast<std::size_t>(t.row)];
        const Rect r{grid.x0 + xsp.x0, grid.y0 + ysp.x0, grid.x0 + xsp.x1, grid.y0 + ysp.x1};
        const auto& h = t.holders;
        // Labels: holders, the tile's ranges, Σ.
        if (r.width() > font * 2.5f && r.height() > font * 1.2f) {
            const Color bg = h.empty() ? Color{235, 235, 235, 255} : device_color(h.front(), n);
            const Color fg = text_on(bg);
            const bool two = r.height() > font * 3;
            Rect top = r, bottom = r;
            if (two) {
                top.y1 = r.center().y;
                bottom.y0 = r.center().y;
            }
            // A label box keeps text readable over stripes and hatching.
            auto label = [&](const Rect& where, const std::string& s, float size) {
                const std::string e = elide(c, s, size, where.width() - 6);
                if (e.empty()) return;
                const Vec2 ext = c.text_size(e, size);
                const Rect b{where.center().x - ext.x / 2 - 3, where.center().y - ext.y / 2 - 1,
                             where.center().x + ext.x / 2 + 3, where.center().y + ext.y / 2 + 1};
                if (h.size() > 1 || partial) c.fill_rect(b, {255, 255, 255, 210});
                c.text({b.x0 + 3, b.y0 + 1}, (h.size() > 1 || partial) ? colors::kText : fg, e,
                       size);
            };
            label(top, holders_label(h) + (partial ? " Σ" : ""), font);
            if (two) label(bottom, tile_text(m, t), small);
        }
        if (c.wants_tip(r)) {
            std::string tip = layout.tensor + " " + tile_text(m, t) + "\nheld by:";
            std::size_t shown = 0;
            for (auto d : h) {
                if (++shown > 16) {
                    tip += "\n  … " + std::to_string(h.size()) + " devices";
                    break;
                }
                const auto* dt = m.device(d);
                tip += "\n  " + device_text(d, dt ? dt->coords : std::vector<int>{});
            }
            if (partial) tip += "\nΣ each holds a partial sum";
            c.tip(r, tip);
        }
    }
    // Range labels along the edges, where they fit.
    if (m.col) {
        float last = -1e9f;
        for (std::size_t i = 0; i < xs.size(); ++i) {
            const std::string s = std::to_string(m.col->cuts[i].begin);
            const float x = grid.x0 + xs[i].x0;
            if (x - last < c.text_size(s, small).x + 6) continue;
            c.text({x + 2, grid.y0 - line}, colors::kMuted, s, small);
            last = x;
        }
    }
    if (m.row) {
        float last = -1e9f;
        for (std::size_t i = 0; i < ys.size(); ++i) {
            const float yy = grid.y0 + ys[i].x0;
            if (yy - last < line) continue;
            const std::string s = std::to_string(m.row->cuts[i].begin);
            c.text({grid.x0 - c.text_size(s, small).x - 4, yy + 1}, colors::kMuted, s, small);
            last = yy;
        }
    }
    if (legend) {
        float ly = area.y1 - legend_h;
        int col = 0;
        for (const auto& d : m.devices) {
            const float lx = area.x0 + pad + static_cast<float>(col) * cell_w;
            c.fill_rect({lx, ly + 2, lx + sw, ly + 2 + sw}, device_color(d.device, n));
            c.stroke_rect({lx, ly + 2, lx + sw, ly + 2 + sw}, colors::kGrid, 1);
            c.text({lx + sw + 6, ly + 2}, colors::kText, device_text(d.device, d.coords), small);
            if (++col == per_row) {
                col = 0;
                ly += line;
            }
        }
    }
}

} // namespace shardscope::render
