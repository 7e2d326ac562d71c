// The tiling picture: a layout cut into tiles, each coloured by the devices that hold it.
#include "render/draw.hpp"
#include "render/palette.hpp"
#include "render/pictures.hpp"
#include "render/text_tiles.hpp"
#include "render/timeline.hpp"
#include "semantics/report.hpp"

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

/// "d3", "d0,1,2,3" (as jax's visualize_array_sharding labels a replicated array "CPU
/// 0,1,2,3"); above 8 holders runs of ids as ranges, "d0-7,16-23 ×16".
std::string tile_holders_label(const std::vector<std::int64_t>& h) {
    if (h.empty()) return "—";
    if (h.size() <= 8) {
        std::string out;
        for (auto d : h)
            out += (out.empty() ? "d" : ",") + std::to_string(d);
        return out;
    }
    return "d" + render::holders_label(h) + " ×" + std::to_string(h.size());
}

std::string dim_text(const TileDim& d) {
    std::string out = typeset_index(d.index) + " (" + std::to_string(d.extent) + ", " +
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

namespace {

/// The fill of a tile: its holder's colour, a replica tint for several holders.
Color tile_fill(const TileModel& m, const Tile& t, const std::vector<std::int64_t>& sizes) {
    if (t.holders.empty()) return {235, 235, 235, 255};
    if (t.holders.size() == 1) {
        const auto* d = m.device(t.holders.front());
        return mesh_device_color(sizes, d ? d->coords : std::vector<int>{}, t.holders.front());
    }
    std::uint32_t mask = 0;
    for (int k : replicated_axes(m, t))
        mask |= 1u << (k % 32);
    return replicated_color(mask);
}

std::string axes_text(const TileModel& m, const std::vector<int>& axes) {
    std::string out;
    for (int k : axes)
        out += (out.empty() ? "" : ",") + m.axis_names.at(static_cast<std::size_t>(k));
    return out;
}

/// One panel's grid: fills, hatching, cuts, labels, hover texts, range labels.
void draw_grid(Canvas& c, const Rect& grid, const TileModel& m, int panel,
               const semantics::Mesh& mesh, float font, std::int64_t highlight) {
    const float small = font * 0.85f, line = font * 1.35f;
    std::vector<std::int64_t> sizes;
    for (const auto& a : mesh.axes)
        sizes.push_back(a.size);
    const auto xs = cut_spans(m.col, grid.width());
    const auto ys = cut_spans(m.row, grid.height());
    const bool partial = !m.partial.empty();
    const std::string mark = partial_mark(m.partial); // Σ, or max for P(max)
    const std::size_t per_panel = static_cast<std::size_t>(m.rows() * m.cols());
    const auto first = m.tiles.begin() + static_cast<std::ptrdiff_t>(per_panel) * panel;
    const auto last = first + static_cast<std::ptrdiff_t>(per_panel);
    auto rect_of = [&](const Tile& t) {
        const auto& xsp = xs[static_cast<std::size_t>(t.col)];
        const auto& ysp = ys[static_cast<std::size_t>(t.row)];
        return Rect{grid.x0 + xsp.x0, grid.y0 + ysp.x0, grid.x0 + xsp.x1, grid.y0 + ysp.x1};
    };
    // One fill per tile: a replicated tile is one block, never bands that read as a split.
    for (auto it = first; it != last; ++it)
        c.fill_rect(rect_of(*it), tile_fill(m, *it, sizes));
    // Partial: every tile holds a part of the sum, so the whole grid is hatched at once.
    if (partial) hatch(c, grid, colors::kHatch, std::max(6.0f, font * 0.6f));
    // The cuts as lines across the grid (one per cut, not an outline per tile: software GL
    // pays per triangle, and a 32x32 tiling would have 1024 outlines).
    for (std::size_t i = 1; i < xs.size(); ++i)
        c.line({grid.x0 + xs[i].x0, grid.y0}, {grid.x0 + xs[i].x0, grid.y1}, colors::kGrid, 1);
    for (std::size_t i = 1; i < ys.size(); ++i)
        c.line({grid.x0, grid.y0 + ys[i].x0}, {grid.x1, grid.y0 + ys[i].x0}, colors::kGrid, 1);
    c.stroke_rect(grid, colors::kGrid, 2);
    for (auto it = first; it != last; ++it) {
        const Tile& t = *it;
        const Rect r = rect_of(t);
        const auto& h = t.holders;
        const auto replicated = replicated_axes(m, t);
        // Labels: holders (and what they are replicated over), the tile's ranges, Σ.
        if (r.width() > font * 2.5f && r.height() > font * 1.2f) {
            const Color bg = tile_fill(m, t, sizes);
            const Color fg = text_on(bg);
            const int lines = r.height() > font * 4.2f ? 3 : r.height() > font * 3 ? 2 : 1;
            auto band = [&](int i) {
                Rect b = r;
                b.y0 = r.y0 + r.height() * static_cast<float>(i) / static_cast<float>(lines);
                b.y1 = r.y0 + r.height() * static_cast<float>(i + 1) / static_cast<float>(lines);
                return b;
            };
            // A label box keeps text readable over hatching.
            auto label = [&](const Rect& where, const std::string& s, float size) {
                const std::string e = elide(c, s, size, where.width() - 6);
                if (e.empty()) return;
                const Vec2 ext = c.text_size(e, size);
                const Rect b{where.center().x - ext.x / 2 - 3, where.center().y - ext.y / 2 - 1,
                             where.center().x + ext.x / 2 + 3, where.center().y + ext.y / 2 + 1};
                if (partial) c.fill_rect(b, {255, 255, 255, 210});
                c.text({b.x0 + 3, b.y0 + 1}, partial ? colors::kText : fg, e, size);
            };
            label(band(0), tile_holders_label(h) + (partial ? " " + mark : ""), font);
            if (lines == 3) {
                std::string middle;
                // On a partial tensor the holders are copies along these axes only.
                if (!replicated.empty())
                    middle =
                        (partial ? "copies over " : "replicated over ") + axes_text(m, replicated);
                if (partial) {
                    std::vector<int> axes;
                    for (const auto& p : m.partial)
                        axes.push_back(p.axis);
                    middle += std::string(middle.empty() ? "" : " · ") + mark + " partial over " +
                              axes_text(m, axes);
                }
                label(band(1), middle, small);
            }
            if (lines >= 2) {
                // The panel's title says the slice; the tile its ranges.
                std::string ranges = tile_text(m, t);
                ranges = ranges.substr(0, ranges.find(']') + 1);
                label(band(lines - 1), ranges, small);
            }
        }
        if (c.wants_tip(r)) {
            std::string tip = m.tensor + " " + tile_text(m, t);
            if (!replicated.empty())
                tip +=
                    (partial ? "\ncopies over " : "\nreplicated over ") + axes_text(m, replicated);
            tip += "\nheld by:";
            std::size_t shown = 0;
            for (auto d : h) {
                if (++shown > 16) {
                    tip += "\n  … " + std::to_string(h.size()) + " devices";
                    break;
                }
                const auto* dt = m.device(d);
                tip += "\n  " + device_text(d, dt ? dt->coords : std::vector<int>{});
            }
            if (partial) tip += "\n" + mark + " each holds a partial " + partial_whole(m.partial);
            c.tip(r, tip);
        }
    }
    // The hovered device's tiles, outlined (the mesh's hover).
    if (highlight >= 0)
        for (auto it = first; it != last; ++it)
            if (std::find(it->holders.begin(), it->holders.end(), highlight) != it->holders.end()) {
                const Rect r = rect_of(*it);
                c.stroke_rect({r.x0 + 2, r.y0 + 2, r.x1 - 2, r.y1 - 2}, colors::kHighlight, 4);
            }
    // Range labels along the edges, where they fit.
    if (m.col) {
        float last_x = -1e9f;
        for (std::size_t i = 0; i < xs.size(); ++i) {
            const std::string s = std::to_string(m.col->cuts[i].begin);
            const float x = grid.x0 + xs[i].x0;
            if (x - last_x < c.text_size(s, small).x + 6) continue;
            c.text({x + 2, grid.y0 - line}, colors::kMuted, s, small);
            last_x = x;
        }
    }
    if (m.row) {
        float last_y = -1e9f;
        for (std::size_t i = 0; i < ys.size(); ++i) {
            const float yy = grid.y0 + ys[i].x0;
            if (yy - last_y < line) continue;
            const std::string s = std::to_string(m.row->cuts[i].begin);
            c.text({grid.x0 - c.text_size(s, small).x - 4, yy + 1}, colors::kMuted, s, small);
            last_y = yy;
        }
    }
}

} // namespace

std::string tiling_title(const Canvas& c, const std::string& name, const std::string& indices,
                         const std::string& placements, float size, float max_width) {
    const std::string sub = "_{" + indices + "}", tail = "   (" + placements + ")";
    auto width = [&](const std::string& s) { return c.text_size(s, size).x; };
    if (max_width <= 0 || width(name + sub + tail) <= max_width) return name + sub + tail;
    // The name shortened to what is left beside the indices and the placements (at least its
    // first letter and "…").
    // (elide takes a width <= 0 for no limit: each is tested first.)
    const float for_name = max_width - width(sub + tail);
    const std::string short_name = for_name > 0 ? elide(c, name, size, for_name) : "";
    if (!short_name.empty()) return short_name + sub + tail;
    // Then the indices too, after a name of a letter.
    const std::string first = elide(c, name, size, width("W…"));
    const float for_head = max_width - width(tail);
    const std::string head = for_head > 0 ? elide(c, first + sub, size, for_head) : "";
    if (!head.empty()) return head + tail;
    return elide(c, name + sub + tail, size, max_width);
}

void draw_tiling(Canvas& c, const Rect& area, const semantics::Mesh& mesh,
                 const semantics::TensorLayout& layout, Drawn drawn, float font, bool compact,
                 std::int64_t highlight) {
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
    for (const auto& i : m.indices) // as this layout shards them (layout_indices)
        idx += (idx.empty() ? "" : " ") + typeset_index(i);
    text_clipped(c, {area.x0 + pad, y}, colors::kText,
                 tiling_title(c, layout.tensor, idx,
                              placements.empty() ? "scalar mesh" : placements, font * 1.15f, maxw),
                 font * 1.15f, maxw);
    y += line * 1.15f;
    if (!compact) {
        text_clipped(c, {area.x0 + pad, y}, colors::kMuted,
                     "global " + semantics::shape_text(layout.global_shape) + " · local " +
                         semantics::shape_text(layout.local_shape) + " per device",
                     small, maxw);
        y += line;
    }
    std::string dims;
    if (m.row) dims += "rows: " + dim_text(*m.row);
    if (m.col) dims += (dims.empty() ? "" : "   ") + std::string("columns: ") + dim_text(*m.col);
    // The hovered device (the mesh's hover in the window) is named in place of the drawn
    // dimensions' line, so that hovering does not move the tiles.
    std::string outlined;
    if (highlight >= 0) {
        const auto* d = m.device(highlight);
        outlined = "outlined: what " + device_text(highlight, d ? d->coords : std::vector<int>{}) +
                   " holds (" + (d ? holding_text(m, highlight) : std::string("nothing")) + ")";
    }
    if (!dims.empty() || !outlined.empty()) {
        text_clipped(c, {area.x0 + pad, y}, outlined.empty() ? colors::kMuted : colors::kHighlight,
                     outlined.empty() ? dims : outlined, small, maxw);
        y += line;
    }
    if (!m.others.empty()) {
        std::string o = "not drawn:";
        for (const auto& d : m.others) {
            o += " " + typeset_index(d.index) + " (" + std::to_string(d.extent);
            if (d.shards > 1) {
                std::string axes;
                for (const auto& a : d.axes)
                    axes += (axes.empty() ? "" : ",") + a;
                o += ", " + std::to_string(d.shards) + " shards over " + axes;
            }
            o += ")";
        }
        if (m.panels.size() > 1) o += " · one panel per slice";
        if (m.panels_folded)
            o += " · too many slices for panels: a tile lists every device holding it in any";
        text_clipped(c, {area.x0 + pad, y}, m.panels_folded ? colors::kError : colors::kMuted, o,
                     small, maxw);
        y += line;
    }
    if (!m.partial.empty()) {
        std::string p = partial_mark(m.partial) + " partial over mesh axis";
        for (const auto& a : m.partial)
            p += " " + a.name + " (" + a.reduce + ")";
        p += ": every holder has a part still to be reduced";
        text_clipped(c, {area.x0 + pad, y}, colors::kText, p, small, maxw);
        y += line;
    }

    // Legend at the bottom: the devices (up to 64) and the replica tints in use.
    const std::int64_t n = mesh.device_count();
    std::vector<std::int64_t> sizes;
    for (const auto& a : mesh.axes)
        sizes.push_back(a.size);
    std::map<std::uint32_t, std::vector<int>> tints; // mask -> axes
    for (const auto& t : m.tiles) {
        const auto axes = replicated_axes(m, t);
        if (axes.empty()) continue;
        std::uint32_t mask = 0;
        for (int k : axes)
            mask |= 1u << (k % 32);
        tints.emplace(mask, axes);
    }
    float legend_h = 0;
    const bool legend = !compact && n <= 64;
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
    // The legend's explanations, one line each: what a tint, the hatching, a grey tile, the
    // panels and the colours of a large mesh mean.
    enum class Swatch { None, Tint, Hatch, Empty };
    struct Explained {
        Swatch swatch;
        Color color;
        std::string text;
    };
    std::vector<Explained> explained;
    std::vector<int> partial_axes;
    for (const auto& p : m.partial)
        partial_axes.push_back(p.axis);
    for (const auto& [mask, axes] : tints)
        // On a partial tensor the holders are copies only along the replicated axes: along a
        // partial axis each holds a different part.
        explained.push_back({Swatch::Tint, replicated_color(mask),
                             partial_axes.empty()
                                 ? "replicated over " + axes_text(m, axes) +
                                       ": every listed device holds the whole block"
                                 : "copies over " + axes_text(m, axes) + ", partial over " +
                                       axes_text(m, partial_axes) +
                                       ": listed devices differing only along " +
                                       axes_text(m, axes) + " hold the same values"});
    if (!m.partial.empty()) {
        explained.push_back({Swatch::Hatch, colors::kBackground,
                             "hatched, " + partial_mark(m.partial) + ": partial over " +
                                 axes_text(m, partial_axes) + ": each holder has a part of the " +
                                 partial_whole(m.partial) + ", still to be reduced"});
    }
    if (std::any_of(m.tiles.begin(), m.tiles.end(),
                    [](const Tile& t) { return t.holders.empty(); }))
        explained.push_back({Swatch::Empty,
                             {235, 235, 235, 255},
                             "grey, —: no device holds it (torch.chunk leaves a shard empty)"});
    {
        std::vector<std::int64_t> idle;
        for (const auto& d : m.devices)
            if (d.tiles.empty()) idle.push_back(d.device);
        if (!idle.empty())
            explained.push_back({Swatch::None, colors::kText,
                                 tile_holders_label(idle) +
                                     (idle.size() == 1 ? " holds" : " hold") +
                                     " nothing: torch.chunk leaves the shard empty"});
    }
    if (m.panels.size() > 1)
        explained.push_back({Swatch::None, colors::kText,
                             "one panel per slice of the undrawn sharded dimensions: a device "
                             "is in exactly one"});
    if (n > 64) {
        // Where to read a tile's devices: hovering it (window, SVG); a PNG has no hover.
        const std::string colours = mesh.axes.size() >= 2
                                        ? "device colours: hue by the leading mesh axes, "
                                          "lightness by the last"
                                        : "device colours: one hue per device";
        if (c.shows_tips()) {
            explained.push_back(
                {Swatch::None, colors::kMuted, colours + "; hover a tile for its devices"});
        } else {
            explained.push_back({Swatch::None, colors::kMuted,
                                 colours + " (the mesh view, --view mesh, shows each)"});
            explained.push_back({Swatch::None, colors::kMuted,
                                 "a tile's devices: hover it in the SVG (-o X.svg) or in the "
                                 "window (shardscope gui)"});
        }
    }
    if (!compact) legend_h += line * static_cast<float>(explained.size());

    // The panels (one per slice of the undrawn sharded dimensions), each a grid with room for
    // its title and its row and column labels.
    const float label_w = m.row ? c.text_size("0000:0000", small).x + 6 : 0;
    const float label_h = m.col ? line : 0;
    const bool multiples = m.panels.size() > 1;
    const float title_h = multiples ? line : 0;
    const Rect room{area.x0 + pad, y, area.x1 - pad, area.y1 - pad - legend_h};
    const int count = static_cast<int>(m.panels.size());
    int best_cols = 1;
    float best = -1;
    for (int pc = 1; pc <= count; ++pc) {
        const int pr = (count + pc - 1) / pc;
        const float w =
            (room.width() - static_cast<float>(pc - 1) * pad) / static_cast<float>(pc) - label_w;
        const float h =
            (room.height() - static_cast<float>(pr - 1) * pad) / static_cast<float>(pr) - label_h -
            title_h;
        const float score = std::min(w, h);
        if (score > best) {
            best = score;
            best_cols = pc;
        }
    }
    const int pc = best_cols, pr = (count + pc - 1) / pc;
    const float cw = (room.width() - static_cast<float>(pc - 1) * pad) / static_cast<float>(pc);
    const float chh = (room.height() - static_cast<float>(pr - 1) * pad) / static_cast<float>(pr);
    for (int p = 0; p < count; ++p) {
        const float x0 = room.x0 + static_cast<float>(p % pc) * (cw + pad);
        const float y0 = room.y0 + static_cast<float>(p / pc) * (chh + pad);
        if (multiples)
            text_clipped(c, {x0, y0}, colors::kText, m.panels[static_cast<std::size_t>(p)].label,
                         font, cw);
        Rect grid{x0 + label_w, y0 + title_h + label_h, x0 + cw, y0 + chh};
        if (grid.width() < 20 || grid.height() < 20) continue;
        // Keep the grid from turning into a sliver: at most 3:1 either way.
        if (grid.width() > 3 * grid.height()) grid.x1 = grid.x0 + 3 * grid.height();
        if (grid.height() > 3 * grid.width()) grid.y1 = grid.y0 + 3 * grid.width();
        draw_grid(c, grid, m, p, mesh, font, highlight);
    }
    if (compact) return;
    float ly = area.y1 - legend_h;
    for (const auto& e : explained) {
        const Rect sq{area.x0 + pad, ly + 2, area.x0 + pad + sw, ly + 2 + sw};
        float tx = area.x0 + pad;
        if (e.swatch != Swatch::None) {
            c.fill_rect(sq, e.color);
            if (e.swatch == Swatch::Hatch) hatch(c, sq, colors::kHatch, 4);
            c.stroke_rect(sq, colors::kGrid, 1);
            tx = sq.x1 + 6;
        }
        text_clipped(c, {tx, ly + 2}, e.swatch == Swatch::None ? colors::kMuted : colors::kText,
                     e.text, small, area.x1 - pad - tx);
        ly += line;
    }
    if (legend) {
        int col = 0;
        for (const auto& d : m.devices) {
            const float lx = area.x0 + pad + static_cast<float>(col) * cell_w;
            c.fill_rect({lx, ly + 2, lx + sw, ly + 2 + sw},
                        mesh_device_color(sizes, d.coords, d.device));
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
