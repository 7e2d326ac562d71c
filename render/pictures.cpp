// Selection, the picture dispatcher, SVG output and the texts shared by the pictures.
#include "render/pictures.hpp"

#include "render/palette.hpp"
#include "render/stepthrough.hpp"
#include "render/svg_canvas.hpp"
#include "semantics/report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace shardscope::render {

std::optional<View> parse_view(std::string_view name) {
    if (name == "tiling") return View::Tiling;
    if (name == "mesh") return View::Mesh;
    if (name == "plan") return View::Plan;
    if (name == "steps") return View::Steps;
    return std::nullopt;
}

std::vector<const semantics::TensorLayout*> statement_layouts(const semantics::StatementPlan& s) {
    std::vector<const semantics::TensorLayout*> out{&s.result};
    for (const auto& o : s.operands)
        if (std::none_of(out.begin(), out.end(),
                         [&](const auto* t) { return t->tensor == o.tensor; }))
            out.push_back(&o);
    return out;
}

bool same_tensor_name(std::string_view a, std::string_view b) {
    auto norm = [](std::string_view s) {
        std::string out;
        for (char ch : s)
            if (ch != '{' && ch != '}' && ch != '^' && ch != '_' && ch != ' ') out += ch;
        return out;
    };
    return a == b || norm(a) == norm(b);
}

const semantics::TensorLayout* selected_layout(const semantics::Plan& plan, const Selection& sel) {
    if (sel.statement < 0 || sel.statement >= static_cast<int>(plan.statements.size()))
        return nullptr;
    const auto& s = plan.statements[static_cast<std::size_t>(sel.statement)];
    if (sel.value >= 0)
        return sel.value < static_cast<int>(s.values.size())
                   ? &s.values[static_cast<std::size_t>(sel.value)].layout
                   : nullptr;
    if (sel.tensor.empty()) return &s.result;
    for (const auto* t : statement_layouts(s))
        if (t->tensor == sel.tensor) return t;
    for (const auto* t : statement_layouts(s))
        if (same_tensor_name(t->tensor, sel.tensor)) return t;
    return nullptr;
}

std::optional<Selection> resolve_selection(const semantics::Plan& plan, int statement_1based,
                                           const std::string& tensor, std::string& error) {
    const int n = static_cast<int>(plan.statements.size());
    if (n == 0) {
        error = "the program has no statement to draw";
        return std::nullopt;
    }
    if (statement_1based < 0 || statement_1based > n) {
        error = "statement " + std::to_string(statement_1based) +
                " is out of range: the program has " + std::to_string(n) +
                (n == 1 ? " statement" : " statements") + " (1 to " + std::to_string(n) + ")";
        return std::nullopt;
    }
    Selection sel;
    auto names_in = [&](const semantics::StatementPlan& s) {
        std::string out;
        for (const auto* t : statement_layouts(s))
            out += (out.empty() ? "" : ", ") + t->tensor;
        return out;
    };
    if (statement_1based > 0) {
        sel.statement = statement_1based - 1;
        sel.tensor = tensor;
        if (!selected_layout(plan, sel)) {
            error = "statement " + std::to_string(statement_1based) + " has no tensor '" + tensor +
                    "' (it has " +
                    names_in(plan.statements[static_cast<std::size_t>(sel.statement)]) + ")";
            return std::nullopt;
        }
        if (!tensor.empty()) sel.tensor = selected_layout(plan, sel)->tensor;
        return sel;
    }
    if (tensor.empty()) return sel;
    for (int pass = 0; pass < 2; ++pass)
        for (int i = 0; i < n; ++i) {
            const auto& s = plan.statements[static_cast<std::size_t>(i)];
            for (const auto* t : statement_layouts(s)) {
                const bool is_result = t == &s.result;
                if ((pass == 0) != is_result) continue;
                if (t->tensor == tensor || same_tensor_name(t->tensor, tensor)) {
                    sel.statement = i;
                    sel.tensor = t->tensor;
                    return sel;
                }
            }
        }
    std::string names;
    for (const auto* t : program_layouts(plan))
        names += (names.empty() ? "" : ", ") + t->tensor;
    error = "no tensor '" + tensor + "' in the program (it has " + names + ")";
    return std::nullopt;
}

std::vector<const semantics::TensorLayout*> program_layouts(const semantics::Plan& plan) {
    std::vector<const semantics::TensorLayout*> out;
    auto put = [&](const semantics::TensorLayout& t, bool replace) {
        for (auto*& o : out)
            if (o->tensor == t.tensor) {
                if (replace) o = &t;
                return;
            }
        out.push_back(&t);
    };
    for (const auto& s : plan.statements) {
        for (const auto& o : s.operands)
            put(o, false);
        put(s.result, true);
    }
    return out;
}

namespace {

/// The subscript form of one character of a mesh-axis subscript: digits and commas (named
/// axes stay as written: Unicode has subscripts for few letters); "" for any other.
std::string subscript_of(char c) {
    static const char* const kDigits[] = {"₀", "₁", "₂", "₃", "₄", "₅", "₆", "₇", "₈", "₉"};
    if (c >= '0' && c <= '9') return kDigits[c - '0'];
    return c == ',' ? "," : "";
}

} // namespace

std::string typeset_index(const std::string& index) {
    std::string out;
    for (std::size_t i = 0; i < index.size();) {
        const char c = index[i];
        if (c == '\'') {
            out += "′";
            ++i;
            continue;
        }
        if (c != '_' || i + 1 >= index.size()) {
            out += c;
            ++i;
            continue;
        }
        // The subscript: {...} or a run of letters, digits and commas.
        std::size_t begin = i + 1, end = begin;
        while (end < index.size() &&
               (std::isalnum(static_cast<unsigned char>(index[end])) || index[end] == ','))
            ++end;
        if (index[begin] == '{') {
            const auto close = index.find('}', begin);
            if (close == std::string::npos) {
                out += index.substr(i);
                break;
            }
            begin = begin + 1;
            end = close;
        }
        std::string sub;
        bool ok = end > begin;
        for (std::size_t k = begin; k < end && ok; ++k) {
            const std::string s = subscript_of(index[k]);
            ok = !s.empty();
            sub += s;
        }
        const std::size_t next = index[i + 1] == '{' ? end + 1 : end;
        out += ok ? sub : index.substr(i, next - i);
        i = next;
    }
    return out;
}

std::string device_text(std::int64_t id, const std::vector<int>& coords) {
    std::string out = "d" + std::to_string(id) + " (";
    for (std::size_t i = 0; i < coords.size(); ++i)
        out += (i ? "," : "") + std::to_string(coords[i]);
    return out + ")";
}

namespace {

std::string range_text(const Range& r) {
    return std::to_string(r.begin) + ":" + std::to_string(r.end);
}

} // namespace

std::string tile_text(const TileModel& m, const Tile& t) {
    std::string out;
    if (m.row) out += range_text(t.rows);
    if (m.col) out += (out.empty() ? "" : ", ") + range_text(t.cols);
    out = "[" + out + "]";
    if (m.panels.size() > 1) out += " " + m.panels.at(static_cast<std::size_t>(t.panel)).label;
    return out;
}

Drawn drawn_by_names(const semantics::TensorLayout& layout, const std::string& row,
                     const std::string& col) {
    int r = -1, c = -1;
    for (std::size_t d = 0; d < layout.indices.size(); ++d) {
        const auto name = logical_index(layout.indices[d]);
        if (r < 0 && name == row)
            r = static_cast<int>(d);
        else if (c < 0 && name == col)
            c = static_cast<int>(d);
    }
    if (r >= 0 && c >= 0 && r != c) return {r, c};
    return default_drawn(layout);
}

std::string holding_text(const TileModel& m, std::int64_t device) {
    const DeviceTiles* d = m.device(device);
    if (!d) return "not on this mesh";
    std::string out;
    if (d->tiles.empty()) {
        out = "nothing (an empty shard)";
    } else {
        const std::size_t show = std::min<std::size_t>(d->tiles.size(), 3);
        for (std::size_t i = 0; i < show; ++i)
            out += (i ? " " : "") + tile_text(m, m.tiles[static_cast<std::size_t>(d->tiles[i])]);
        if (d->tiles.size() > show) out += " … (" + std::to_string(d->tiles.size()) + " tiles)";
        out += " of " + semantics::shape_text(m.global_shape);
        if (m.panels.size() > 1) {
            // Its slice of the undrawn dimensions (every tile of a device is in one panel).
            out += ", " + m.panels
                              .at(static_cast<std::size_t>(
                                  m.tiles[static_cast<std::size_t>(d->tiles.front())].panel))
                              .label;
        } else {
            for (const auto& o : m.others)
                if (o.shards > 1) out += ", its shard of " + o.index;
        }
    }
    if (!m.partial.empty()) {
        out += "  " + partial_mark(m.partial) + " partial over";
        for (const auto& p : m.partial)
            out += " " + p.name;
    }
    return out;
}

Drawn default_drawn(const semantics::TensorLayout& layout) {
    const int rank = static_cast<int>(layout.indices.size());
    if (rank <= 2) return {};
    std::vector<int> sharded;
    for (const auto& p : layout.placements)
        if (p.kind == semantics::Placement::Kind::Shard && p.dim >= 0 && p.dim < rank &&
            std::find(sharded.begin(), sharded.end(), p.dim) == sharded.end())
            sharded.push_back(p.dim);
    std::sort(sharded.begin(), sharded.end());
    if (sharded.size() >= 2) return {sharded[0], sharded[1]};
    if (sharded.size() == 1) {
        const int other = sharded[0] == rank - 1 ? rank - 2 : rank - 1;
        return {std::min(sharded[0], other), std::max(sharded[0], other)};
    }
    return {};
}

Drawn drawn_of(const Selection& sel, const semantics::TensorLayout& layout) {
    if (sel.row_dim >= 0 && sel.col_dim >= 0) return {sel.row_dim, sel.col_dim};
    return default_drawn(layout);
}

std::string device_holding_text(const semantics::Mesh& mesh, const semantics::TensorLayout& layout,
                                const std::vector<int>& coords) {
    std::vector<std::int64_t> sizes;
    for (const auto& a : mesh.axes)
        sizes.push_back(a.size);
    std::string out;
    bool empty = false;
    for (std::size_t d = 0; d < layout.indices.size(); ++d) {
        // The atoms of written dimension d, major to minor.
        std::vector<const semantics::AtomLayout*> atoms;
        for (const auto& a : layout.atoms)
            if (a.dim == static_cast<int>(d)) atoms.push_back(&a);
        std::vector<Range> ranges;
        for (const auto* a : atoms) {
            ranges.push_back(semantics::atom_range(a->extent, a->axes, sizes, coords));
            empty = empty || ranges.back().size() == 0;
        }
        // One contiguous run when nothing is cut, or when the major atom is the first cut and
        // every atom minor of it is whole; otherwise strided runs, given per atom.
        std::size_t first_cut = atoms.size();
        for (std::size_t k = 0; k < atoms.size(); ++k)
            if (ranges[k].size() != atoms[k]->extent) {
                first_cut = k;
                break;
            }
        bool contiguous = true;
        for (std::size_t k = first_cut + 1; k < atoms.size(); ++k)
            contiguous = contiguous && ranges[k].size() == atoms[k]->extent;
        std::string dim;
        if (atoms.empty()) {
            dim = "?";
        } else if (contiguous && (first_cut == atoms.size() || first_cut == 0)) {
            std::int64_t inner = 1;
            for (std::size_t k = first_cut + 1; k < atoms.size(); ++k)
                inner *= atoms[k]->extent;
            if (first_cut == atoms.size()) {
                std::int64_t total = 1;
                for (const auto* a : atoms)
                    total *= a->extent;
                dim = "0:" + std::to_string(total);
            } else {
                dim = std::to_string(ranges[first_cut].begin * inner) + ":" +
                      std::to_string(ranges[first_cut].end * inner);
            }
        } else {
            dim = "(";
            for (std::size_t k = 0; k < atoms.size(); ++k)
                dim += (k ? ", " : "") + atoms[k]->index.text() + " " +
                       std::to_string(ranges[k].begin) + ":" + std::to_string(ranges[k].end);
            dim += ")";
        }
        out += (out.empty() ? "" : ", ") + dim;
    }
    out = empty ? "nothing (an empty shard)"
                : "[" + out + "] of " + semantics::shape_text(layout.global_shape);
    std::string partial;
    std::vector<PartialAxis> ops;
    for (std::size_t k = 0; k < layout.placements.size(); ++k)
        if (layout.placements[k].kind == semantics::Placement::Kind::Partial) {
            partial += " " + mesh.axes[k].name;
            ops.push_back({static_cast<int>(k), mesh.axes[k].name,
                           std::string(semantics::partial_op_name(layout.placements[k].reduce))});
        }
    if (!partial.empty()) out += "  " + partial_mark(ops) + " partial over" + partial;
    return out;
}

Vec2 picture_size(const semantics::Plan& plan, View view, const Selection& sel) {
    switch (view) {
    case View::Tiling:
        return {820, 620};
    case View::Mesh: {
        const auto n = plan.mesh.device_count();
        if (n > 256) return {980, 1020};
        if (n > 64) return {900, 860};
        return {760, 560};
    }
    case View::Plan: {
        std::size_t steps = 0, alts = 0;
        if (sel.statement >= 0 && sel.statement < static_cast<int>(plan.statements.size())) {
            steps = plan.statements[static_cast<std::size_t>(sel.statement)].steps.size();
            alts = plan.statements[static_cast<std::size_t>(sel.statement)].alternatives.size();
        }
        return {960, 230 + 26.0f * static_cast<float>(steps + alts)};
    }
    case View::Steps:
        return {1100, 560};
    }
    return {800, 600};
}

Rect zoomed_area(const Rect& area, float zoom, Vec2 pan) {
    const float z = std::clamp(zoom, 0.1f, 64.0f);
    return {area.x0 + pan.x, area.y0 + pan.y, area.x0 + pan.x + area.width() * z,
            area.y0 + pan.y + area.height() * z};
}

void draw_picture(Canvas& c, const Rect& area, const semantics::Plan& plan, View view,
                  const Selection& sel, float font) {
    switch (view) {
    case View::Tiling: {
        const auto* t = selected_layout(plan, sel);
        if (!t) {
            c.text({area.x0 + 8, area.y0 + 8}, colors::kMuted, "nothing to draw", font);
            return;
        }
        draw_tiling(c, zoomed_area(area, sel.zoom, sel.pan), plan.mesh, *t, drawn_of(sel, *t), font,
                    false, sel.highlight);
        return;
    }
    case View::Mesh: {
        std::vector<const semantics::TensorLayout*> layouts = program_layouts(plan);
        draw_mesh(c, area, plan.mesh, layouts, font);
        return;
    }
    case View::Plan:
        draw_plan(c, area, plan, sel.statement, font);
        return;
    case View::Steps:
        draw_step(c, area, plan, sel.statement, sel.step, font, sel.substep);
        return;
    }
}

std::string render_svg(const semantics::Plan& plan, View view, const Selection& sel,
                       std::string* problem, float scale, bool tight) {
    const Vec2 size = picture_size(plan, view, sel);
    SvgCanvas c(size.x * scale, size.y * scale);
    c.set_tight(tight);
    draw_picture(c, {0, 0, size.x * scale, size.y * scale}, plan, view, sel, 14 * scale);
    if (problem) *problem = c.problem();
    return c.str();
}

std::string render_steps_animation_svg(const semantics::Plan& plan, int statement, float seconds,
                                       std::string* problem, float scale, bool tight) {
    if (problem) problem->clear();
    if (statement < 0 || statement >= static_cast<int>(plan.statements.size())) {
        if (problem) *problem = "no such statement";
        return {};
    }
    const auto& s = plan.statements[static_cast<std::size_t>(statement)];
    const auto shots = step_sequence(plan, s);
    Selection sel;
    sel.statement = statement;
    const Vec2 size = picture_size(plan, View::Steps, sel);
    const float w = size.x * scale, h = size.y * scale;
    Rect ink{};
    bool have_ink = false;
    std::ostringstream body;
    const auto n = shots.size();
    char buf[64];
    auto fraction = [&](std::size_t i) {
        std::snprintf(buf, sizeof buf, "%.6g", static_cast<double>(i) / static_cast<double>(n));
        return std::string(buf);
    };
    std::snprintf(buf, sizeof buf, "%.6gs", static_cast<double>(seconds) * static_cast<double>(n));
    const std::string dur = buf;
    body << "<rect x=\"0\" y=\"0\" width=\"" << w << "\" height=\"" << h
         << "\" fill=\"#ffffff\"/>\n";
    for (std::size_t i = 0; i < n; ++i) {
        SvgCanvas c(w, h);
        draw_step(c, {0, 0, w, h}, plan, statement, shots[i].frame, 14 * scale, shots[i].substep);
        if (problem && problem->empty() && !c.problem().empty()) *problem = c.problem();
        Rect box{};
        if (c.ink_box(box)) {
            if (!have_ink) {
                ink = box;
                have_ink = true;
            } else {
                ink = {std::min(ink.x0, box.x0), std::min(ink.y0, box.y0), std::max(ink.x1, box.x1),
                       std::max(ink.y1, box.y1)};
            }
        }
        std::string id = "frame-" + std::to_string(shots[i].frame);
        if (shots[i].substep > 0) id += "-message-" + std::to_string(shots[i].substep);
        body << "<g id=\"" << id << "\"" << (i == 0 ? "" : " visibility=\"hidden\"") << ">\n";
        if (n > 1) {
            // Discrete: each value holds from its key time to the next.
            std::string values, times;
            if (i == 0) {
                values = "visible;hidden";
                times = "0;" + fraction(1);
            } else if (i + 1 == n) {
                values = "hidden;visible";
                times = "0;" + fraction(i);
            } else {
                values = "hidden;visible;hidden";
                times = "0;" + fraction(i) + ";" + fraction(i + 1);
            }
            body << "<animate attributeName=\"visibility\" calcMode=\"discrete\" values=\""
                 << values << "\" keyTimes=\"" << times << "\" dur=\"" << dur
                 << "\" repeatCount=\"indefinite\"/>\n";
        }
        std::string drawn = c.body();
        // The canvas's own background (its first element) is drawn once, below every frame.
        const auto first = drawn.find('\n');
        body << (first == std::string::npos ? std::string() : drawn.substr(first + 1)) << "</g>\n";
    }
    Rect box{0, 0, w, h};
    if (tight && have_ink)
        box = {std::max(0.0f, ink.x0 - 8), std::max(0.0f, ink.y0 - 8), std::min(w, ink.x1 + 8),
               std::min(h, ink.y1 + 8)};
    return SvgCanvas::document(box, body.str());
}

} // namespace shardscope::render
