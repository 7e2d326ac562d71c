#include "render/text_tiles.hpp"

#include "parser/source.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace shardscope::render {

namespace {

std::size_t width_of(const std::string& s) {
    return utf8_length(s);
}

std::string pad_center(const std::string& s, std::size_t w) {
    const std::size_t n = width_of(s);
    if (n >= w) return s;
    const std::size_t left = (w - n) / 2;
    return std::string(left, ' ') + s + std::string(w - n - left, ' ');
}

std::string pad_left(const std::string& s, std::size_t w) { // right-aligned
    const std::size_t n = width_of(s);
    return n >= w ? s : std::string(w - n, ' ') + s;
}

std::string repeat(const std::string& s, std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i)
        out += s;
    return out;
}

std::string range_label(const Range& r) {
    return std::to_string(r.begin) + ":" + std::to_string(r.end);
}

/// Which grid positions to draw along one direction: all of them, or the first ones, an
/// elision (-1) and the last.
std::vector<int> shown(int count, int fit) {
    std::vector<int> out;
    if (count <= fit) {
        for (int i = 0; i < count; ++i)
            out.push_back(i);
        return out;
    }
    fit = std::max(fit, 3);
    for (int i = 0; i < fit - 2; ++i)
        out.push_back(i);
    out.push_back(-1);
    out.push_back(count - 1);
    return out;
}

// Light backgrounds (xterm 256 colours) with black text: readable on dark and light themes.
constexpr int kPalette[] = {153, 217, 187, 223, 183, 152, 229, 189,
                            210, 158, 222, 195, 181, 194, 225, 230};

/// Slices (small multiples) drawn before the rest are elided.
constexpr int kMaxTextPanels = 8;

std::string dim_text(const TileDim& d) {
    return d.index + " (" + std::to_string(d.extent) + ", " + std::to_string(d.cuts.size()) +
           (d.cuts.size() == 1 ? " tile)" : " tiles)");
}

} // namespace

std::string holders_label(const std::vector<std::int64_t>& holders) {
    std::string out;
    for (std::size_t i = 0; i < holders.size();) {
        std::size_t j = i;
        while (j + 1 < holders.size() && holders[j + 1] == holders[j] + 1)
            ++j;
        if (!out.empty()) out += ",";
        if (j >= i + 2) {
            out += std::to_string(holders[i]) + "-" + std::to_string(holders[j]);
        } else {
            for (std::size_t k = i; k <= j; ++k)
                out += (k > i ? "," : "") + std::to_string(holders[k]);
        }
        i = j + 1;
    }
    return out.empty() ? "-" : out;
}

std::string draw_tiles(const TileModel& m, const TextTileOptions& o) {
    std::string out;
    // Heading: the tensor, its shape and placements, then what is drawn.
    std::string indices;
    for (const auto& i : m.indices)
        indices += (indices.empty() ? "" : " ") + i;
    std::string shape;
    for (auto n : m.global_shape)
        shape += (shape.empty() ? "" : "×") + std::to_string(n);
    std::string placements;
    for (const auto& p : m.placements)
        placements += (placements.empty() ? "" : ", ") + p.text();
    out += m.tensor + " [" + indices + "]  " + (shape.empty() ? "scalar" : shape) + "  (" +
           placements + ")\n";
    std::string mark;
    if (!m.partial.empty()) {
        std::string axes;
        bool max = false;
        for (const auto& p : m.partial) {
            axes += (axes.empty() ? "" : ", ") + p.name;
            max |= p.reduce == "max";
        }
        mark = max ? " max" : " Σ";
        out += std::string("partial over mesh axis ") + axes + " (" + (max ? "max" : "sum") +
               "): each holder has a part still to be " + (max ? "maxed" : "summed") + ", marked" +
               mark + "\n";
    }
    if (m.row) out += "rows: " + dim_text(*m.row) + "\n";
    if (m.col) out += "columns: " + dim_text(*m.col) + "\n";
    for (const auto* d : {m.row ? &*m.row : nullptr, m.col ? &*m.col : nullptr})
        if (d && d->folded) {
            std::string left_out;
            for (const auto& a : d->folded_atoms)
                left_out += (left_out.empty() ? "" : " ") + a;
            out += d->index + " is folded: its shards are strided; " + left_out +
                   " left out, ranges count elements of a shard, not positions\n";
        }
    if (m.panels_folded)
        out += "the undrawn dimensions have more than " + std::to_string(kMaxPanels) +
               " slices: a tile lists every device holding it in some slice of them\n";
    for (const auto& d : m.others) {
        std::string axes;
        for (const auto& a : d.axes)
            axes += (axes.empty() ? "" : ",") + a;
        out += "not drawn: " + d.index + " (" + std::to_string(d.extent) + ", " +
               (d.shards == 1 ? std::string("whole") : std::to_string(d.shards) + " shards") +
               (axes.empty() ? "" : " over mesh axis " + axes) + ")\n";
    }

    if (m.panels.size() > 1) {
        std::string names;
        for (const auto& d : m.others)
            if (d.shards > 1) names += (names.empty() ? "" : ", ") + logical_index(d.index);
        out += "one grid per slice of " + names + " (each device holds one slice)\n";
    }
    {
        std::set<std::vector<int>> sets;
        for (const auto& t : m.tiles) {
            auto axes = replicated_axes(m, t);
            if (!axes.empty()) sets.insert(std::move(axes));
        }
        for (const auto& axes : sets) {
            std::string names;
            for (int k : axes)
                names += (names.empty() ? "" : ",") + m.axis_names.at(static_cast<std::size_t>(k));
            // On a partial tensor the devices of a box are copies along these axes only.
            out += m.partial.empty() ? "replicated over mesh axis " + names +
                                           ": every device of a box holds the same block\n"
                                     : "copies over mesh axis " + names +
                                           ": devices of a box that differ only "
                                           "along " +
                                           names +
                                           " hold the same values (along a partial axis "
                                           "each holds a different part)\n";
        }
    }
    // Cells: labels and sizes.
    const int rows = m.rows(), cols = m.cols();
    std::vector<std::string> labels;
    std::size_t cell = 3;
    for (const auto& t : m.tiles) {
        labels.push_back(holders_label(t.holders) + mark);
        cell = std::max(cell, width_of(labels.back()));
    }
    std::vector<std::string> col_labels, row_labels;
    if (m.col)
        for (const auto& r : m.col->cuts) {
            col_labels.push_back(range_label(r));
            cell = std::max(cell, width_of(col_labels.back()));
        }
    std::size_t margin = 0;
    if (m.row)
        for (const auto& r : m.row->cuts) {
            row_labels.push_back(range_label(r));
            margin = std::max(margin, width_of(row_labels.back()));
        }
    cell += 2;
    const std::size_t left = margin > 0 ? margin + 1 : 0;
    const int fit_cols =
        static_cast<int>((static_cast<std::size_t>(std::max(o.width, 20)) - left - 1) / (cell + 1));
    const auto show_cols = shown(cols, std::max(fit_cols, 1));
    const auto show_rows = shown(rows, std::max(o.max_rows, 1));
    const int height = rows <= 2 ? 3 : 1;

    // Colours per holder set, in order of first appearance.
    std::map<std::vector<std::int64_t>, int> colour_of;
    for (const auto& t : m.tiles)
        colour_of.emplace(t.holders, static_cast<int>(colour_of.size()));
    auto paint = [&](const std::string& text, const Tile* t) {
        if (!o.color || !t) return text;
        const int c = kPalette[static_cast<std::size_t>(colour_of[t->holders]) %
                               (sizeof kPalette / sizeof kPalette[0])];
        return "\033[30;48;5;" + std::to_string(c) + "m" + text + "\033[0m";
    };

    const std::string blank_margin(left, ' ');
    auto border = [&](const char* l, const char* mid, const char* r) {
        std::string line = blank_margin + l;
        for (std::size_t i = 0; i < show_cols.size(); ++i)
            line += repeat("─", cell) + (i + 1 < show_cols.size() ? mid : r);
        return line + "\n";
    };
    const bool multiples = m.panels.size() > 1;
    const int panels_shown = std::min(static_cast<int>(m.panels.size()), kMaxTextPanels);
    for (int panel = 0; panel < panels_shown; ++panel) {
        if (multiples)
            out += "slice " + std::to_string(panel + 1) + " of " + std::to_string(m.panels.size()) +
                   ": " + m.panels[static_cast<std::size_t>(panel)].label + "\n";
        if (m.col) {
            std::string line = blank_margin + " ";
            for (int c : show_cols)
                line +=
                    pad_center(c < 0 ? "⋯" : col_labels[static_cast<std::size_t>(c)], cell) + " ";
            while (!line.empty() && line.back() == ' ')
                line.pop_back();
            out += line + "\n";
        }
        out += border("┌", "┬", "┐");
        for (std::size_t ri = 0; ri < show_rows.size(); ++ri) {
            const int r = show_rows[ri];
            const int h = r < 0 ? 1 : height;
            for (int line_no = 0; line_no < h; ++line_no) {
                const bool middle = line_no == h / 2;
                std::string line;
                if (left > 0)
                    line +=
                        pad_left(middle ? (r < 0 ? "⋮" : row_labels[static_cast<std::size_t>(r)])
                                        : "",
                                 margin) +
                        " ";
                line += "│";
                for (int c : show_cols) {
                    std::string text;
                    const Tile* t = nullptr;
                    if (r >= 0 && c >= 0) {
                        t = &m.at(r, c, panel);
                        if (middle)
                            text = labels[static_cast<std::size_t>((panel * rows + r) * cols + c)];
                    } else if (middle) {
                        text = r < 0 ? "⋮" : "⋯";
                    }
                    line += paint(pad_center(text, cell), t) + "│";
                }
                out += line + "\n";
            }
            if (ri + 1 < show_rows.size()) out += border("├", "┼", "┤");
        }
        out += border("└", "┴", "┘");
    }
    if (panels_shown < static_cast<int>(m.panels.size()))
        out += "… " + std::to_string(static_cast<int>(m.panels.size()) - panels_shown) +
               " more slices not shown\n";

    std::string empty;
    for (const auto& d : m.devices)
        if (d.tiles.empty()) empty += (empty.empty() ? "" : ", ") + std::to_string(d.device);
    if (!empty.empty())
        out += empty.find(',') == std::string::npos
                   ? "device " + empty + " holds nothing: torch.chunk leaves its shard empty\n"
                   : "devices " + empty + " hold nothing: torch.chunk leaves their shards empty\n";
    return out;
}

} // namespace shardscope::render
