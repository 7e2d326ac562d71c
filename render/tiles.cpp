#include "render/tiles.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace shardscope::render {

using semantics::AtomLayout;
using semantics::Mesh;
using semantics::Placement;
using semantics::TensorLayout;

const DeviceTiles* TileModel::device(std::int64_t id) const {
    for (const auto& d : devices)
        if (d.device == id) return &d;
    return nullptr;
}

namespace {

/// The mesh as sizes, every device's coordinates and ids (row-major over the coordinates).
struct MeshView {
    std::vector<std::int64_t> sizes;
    std::vector<std::vector<int>> coords; ///< per position
    std::vector<std::int64_t> ids;        ///< per position
};

MeshView view_of(const Mesh& mesh) {
    MeshView m;
    for (const auto& a : mesh.axes)
        m.sizes.push_back(a.size);
    const std::int64_t n = mesh.device_count();
    std::vector<int> c(m.sizes.size(), 0);
    for (std::int64_t p = 0; p < n; ++p) {
        m.coords.push_back(c);
        m.ids.push_back(mesh.devices.empty() ? p : mesh.devices.at(static_cast<std::size_t>(p)));
        for (std::size_t k = c.size(); k-- > 0;) {
            if (++c[k] < m.sizes[k]) break;
            c[k] = 0;
        }
    }
    return m;
}

/// Devices an atom is split over (the product of its axes' sizes).
std::int64_t split_count(const AtomLayout& a, const MeshView& m) {
    std::int64_t n = 1;
    for (int k : a.axes)
        n *= m.sizes[static_cast<std::size_t>(k)];
    return n;
}

/// The distinct non-empty ranges of an atom over every device, in order.
std::vector<Range> segments(const AtomLayout& a, const MeshView& m) {
    std::set<std::pair<std::int64_t, std::int64_t>> seen;
    for (const auto& c : m.coords) {
        const auto r = semantics::atom_range(a.extent, a.axes, m.sizes, c);
        if (r.size() > 0) seen.insert({r.begin, r.end});
    }
    std::vector<Range> out;
    for (const auto& [b, e] : seen)
        out.push_back({b, e});
    return out;
}

/// One piece of a drawn dimension: its range, and per atom of the dimension the atom range it
/// covers (for deciding which devices hold it).
struct Piece {
    Range range;
    std::vector<Range> atoms;
};

/// A drawn dimension: the TileDim and, per piece, the mesh positions holding it.
struct Cut {
    TileDim dim;
    std::vector<std::vector<std::size_t>> holders; ///< per cut: mesh positions
};

/// The written dimension `d` of `t` cut into pieces (see the header comment).
Cut cut_dimension(const TensorLayout& t, int d, const MeshView& m) {
    std::vector<const AtomLayout*> atoms;
    for (const auto& a : t.atoms)
        if (a.dim == d) atoms.push_back(&a);
    Cut out;
    out.dim.dim = d;
    out.dim.index = t.indices.at(static_cast<std::size_t>(d));
    out.dim.extent = t.global_shape.at(static_cast<std::size_t>(d));
    // s: the most minor atom split over more than one device.
    int s = -1;
    for (std::size_t k = 0; k < atoms.size(); ++k)
        if (split_count(*atoms[k], m) > 1) s = static_cast<int>(k);

    std::vector<Piece> pieces;
    if (s < 0 || out.dim.extent == 0) {
        Piece p{{0, out.dim.extent}, {}};
        for (const auto* a : atoms)
            p.atoms.push_back({0, a->extent});
        pieces.push_back(p);
    } else {
        const auto su = static_cast<std::size_t>(s);
        // Exact: every value of the atoms major of s, times the chunks of s.
        std::vector<std::vector<Range>> choices(atoms.size());
        double count = 1;
        for (std::size_t k = 0; k < atoms.size(); ++k) {
            if (k < su) {
                count *= static_cast<double>(atoms[k]->extent);
            } else if (k == su) {
                choices[k] = segments(*atoms[k], m);
                count *= static_cast<double>(choices[k].size());
            } else {
                choices[k] = {{0, atoms[k]->extent}};
            }
        }
        out.dim.folded = count > static_cast<double>(kMaxCuts);
        for (std::size_t k = 0; k < su; ++k) {
            if (!out.dim.folded) {
                for (std::int64_t v = 0; v < atoms[k]->extent; ++v)
                    choices[k].push_back({v, v + 1});
            } else if (split_count(*atoms[k], m) > 1) {
                choices[k] = segments(*atoms[k], m);
            } else {
                choices[k] = {{0, atoms[k]->extent}};
                out.dim.folded_atoms.push_back(atoms[k]->index.text());
            }
        }
        // Odometer over the choices, major to minor.
        std::vector<std::size_t> at(atoms.size(), 0);
        std::int64_t next = 0; // folded: shard coordinates
        for (;;) {
            Piece p;
            std::int64_t begin = 0, size = 1;
            for (std::size_t k = 0; k < atoms.size(); ++k) {
                const auto r = choices[k][at[k]];
                p.atoms.push_back(r);
                begin = begin * atoms[k]->extent + r.begin;
                size *= r.size();
            }
            if (out.dim.folded) {
                p.range = {next, next + size};
                next += size;
            } else {
                // Only atom s spans several values, and the atoms minor of it are whole.
                p.range = {begin, begin + size};
            }
            pieces.push_back(std::move(p));
            std::size_t k = atoms.size();
            while (k-- > 0) {
                if (++at[k] < choices[k].size()) break;
                at[k] = 0;
            }
            if (k == static_cast<std::size_t>(-1)) break;
        }
    }
    // Holders: devices whose range of every atom covers the piece's.
    std::vector<std::vector<std::size_t>> holders;
    for (const auto& p : pieces) {
        std::vector<std::size_t> h;
        for (std::size_t pos = 0; pos < m.coords.size(); ++pos) {
            bool holds = true;
            for (std::size_t k = 0; k < atoms.size() && holds; ++k) {
                const auto r =
                    semantics::atom_range(atoms[k]->extent, atoms[k]->axes, m.sizes, m.coords[pos]);
                holds = r.begin <= p.atoms[k].begin && p.atoms[k].end <= r.end;
            }
            if (holds) h.push_back(pos);
        }
        holders.push_back(std::move(h));
    }
    // Merge adjacent pieces held by the same devices.
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        if (!out.dim.cuts.empty() && out.holders.back() == holders[i] &&
            out.dim.cuts.back().end == pieces[i].range.begin) {
            out.dim.cuts.back().end = pieces[i].range.end;
            continue;
        }
        out.dim.cuts.push_back(pieces[i].range);
        out.holders.push_back(holders[i]);
    }
    return out;
}

OtherDim other_dimension(const TensorLayout& t, int d, const MeshView& m,
                         const std::vector<std::string>& axis_names) {
    OtherDim o;
    o.dim = d;
    o.index = t.indices.at(static_cast<std::size_t>(d));
    o.extent = t.global_shape.at(static_cast<std::size_t>(d));
    std::set<std::vector<std::int64_t>> shards;
    for (const auto& c : m.coords) {
        std::vector<std::int64_t> key;
        bool empty = false;
        for (const auto& a : t.atoms) {
            if (a.dim != d) continue;
            const auto r = semantics::atom_range(a.extent, a.axes, m.sizes, c);
            empty |= r.size() == 0;
            key.push_back(r.begin);
        }
        if (!empty) shards.insert(key);
    }
    o.shards = static_cast<std::int64_t>(shards.size());
    for (const auto& a : t.atoms)
        if (a.dim == d)
            for (int k : a.axes)
                o.axes.push_back(axis_names[static_cast<std::size_t>(k)]);
    return o;
}

/// "f[0:8192]": the slice of an undrawn dimension given by its atoms' ranges. A group cut only
/// in its major atom (every atom minor of the cut one whole) is one contiguous range; else
/// each atom's range is given, "(r 0:1, c 0:2)".
std::string slice_label(const TensorLayout& t, int d, const std::vector<Range>& ranges) {
    std::vector<const AtomLayout*> atoms;
    for (const auto& a : t.atoms)
        if (a.dim == d) atoms.push_back(&a);
    std::size_t first_cut = atoms.size();
    for (std::size_t k = 0; k < atoms.size(); ++k)
        if (ranges[k].size() != atoms[k]->extent) {
            first_cut = k;
            break;
        }
    bool contiguous = first_cut == 0 || first_cut == atoms.size();
    for (std::size_t k = first_cut + 1; k < atoms.size(); ++k)
        contiguous = contiguous && ranges[k].size() == atoms[k]->extent;
    const std::string index = logical_index(t.indices.at(static_cast<std::size_t>(d)));
    if (contiguous) {
        std::int64_t inner = 1, total = 1;
        for (std::size_t k = 0; k < atoms.size(); ++k) {
            total *= atoms[k]->extent;
            if (k > first_cut) inner *= atoms[k]->extent;
        }
        if (first_cut == atoms.size()) return index + "[0:" + std::to_string(total) + "]";
        return index + "[" + std::to_string(ranges[first_cut].begin * inner) + ":" +
               std::to_string(ranges[first_cut].end * inner) + "]";
    }
    std::string out = index + "[(";
    for (std::size_t k = 0; k < atoms.size(); ++k)
        out += (k ? ", " : "") + atoms[k]->index.text() + " " + std::to_string(ranges[k].begin) +
               ":" + std::to_string(ranges[k].end);
    return out + ")]";
}

} // namespace

std::string logical_index(const std::string& index) {
    std::string out;
    for (std::size_t i = 0; i < index.size();) {
        if (index[i] != '_') {
            out += index[i++];
            continue;
        }
        ++i;
        if (i < index.size() && index[i] == '{') {
            int depth = 0;
            for (; i < index.size(); ++i) {
                depth += index[i] == '{';
                depth -= index[i] == '}';
                if (depth == 0) {
                    ++i;
                    break;
                }
            }
        } else {
            while (i < index.size() &&
                   (std::isalnum(static_cast<unsigned char>(index[i])) || index[i] == ','))
                ++i;
        }
    }
    return out;
}

namespace {
std::pair<bool, bool> sum_max(const std::vector<PartialAxis>& partial) {
    bool sum = false, max = false;
    for (const auto& p : partial)
        (p.reduce == "max" ? max : sum) = true;
    return {sum, max};
}
} // namespace

std::string partial_mark(const std::vector<PartialAxis>& partial) {
    const auto [sum, max] = sum_max(partial);
    return sum && max ? "Σ/max" : max ? "max" : sum ? "Σ" : "";
}

std::string partial_whole(const std::vector<PartialAxis>& partial) {
    const auto [sum, max] = sum_max(partial);
    return sum && max ? "sum or max" : max ? "max" : "sum";
}

std::vector<int> replicated_axes(const TileModel& m, const Tile& t) {
    std::vector<int> out;
    if (t.holders.size() < 2) return out;
    const auto* first = m.device(t.holders.front());
    if (!first) return out;
    for (std::size_t k = 0; k < first->coords.size(); ++k) {
        // Holders along a partial axis hold different parts of a sum, not copies.
        if (std::any_of(m.partial.begin(), m.partial.end(),
                        [&](const PartialAxis& p) { return p.axis == static_cast<int>(k); }))
            continue;
        for (auto h : t.holders) {
            const auto* d = m.device(h);
            if (d && d->coords[k] != first->coords[k]) {
                out.push_back(static_cast<int>(k));
                break;
            }
        }
    }
    return out;
}

namespace {

/// A mesh position's slices of the sharded undrawn dimensions: per dimension, per atom, its
/// [begin, end). The panels are the distinct keys.
using PanelKey = std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>;

/// Position `p`'s key into `key`; false when it holds nothing of one of the dimensions.
bool panel_key(const TensorLayout& layout, const std::vector<int>& sharded_others,
               const MeshView& m, std::size_t p, PanelKey& key) {
    bool empty = false;
    for (int d : sharded_others) {
        auto& k = key.emplace_back();
        for (const auto& a : layout.atoms) {
            if (a.dim != d) continue;
            const auto r = semantics::atom_range(a.extent, a.axes, m.sizes, m.coords[p]);
            empty |= r.size() == 0;
            k.push_back({r.begin, r.end});
        }
    }
    return !empty;
}

} // namespace

TileModel tile_model(const Mesh& mesh, const TensorLayout& layout, Drawn drawn) {
    const int rank = static_cast<int>(layout.indices.size());
    if (layout.global_shape.size() != layout.indices.size())
        throw std::invalid_argument("tile_model: " + layout.tensor +
                                    " has a shape of another rank than its indices");
    if (layout.placements.size() != mesh.axes.size())
        throw std::invalid_argument("tile_model: " + layout.tensor + " is laid out on a mesh of " +
                                    std::to_string(layout.placements.size()) + " axes, not " +
                                    std::to_string(mesh.axes.size()));
    for (const auto& a : layout.atoms) {
        if (a.dim < 0 || a.dim >= rank)
            throw std::invalid_argument("tile_model: an atom of " + layout.tensor +
                                        " belongs to no written dimension");
        for (int k : a.axes)
            if (k < 0 || k >= static_cast<int>(mesh.axes.size()))
                throw std::invalid_argument("tile_model: " + layout.tensor +
                                            " is sharded over a mesh axis the mesh lacks");
    }
    if (mesh.device_count() > kMaxDevices)
        throw std::invalid_argument(
            "tile_model: the mesh has " + std::to_string(mesh.device_count()) +
            " devices; tilings are drawn for at most " + std::to_string(kMaxDevices));
    if (!mesh.devices.empty() &&
        static_cast<std::int64_t>(mesh.devices.size()) != mesh.device_count())
        throw std::invalid_argument("tile_model: the mesh's device list does not match its size");

    if (rank >= 2) {
        if (drawn.row < 0 && drawn.col < 0) drawn = {rank - 2, rank - 1};
        if (drawn.row < 0 || drawn.col < 0 || drawn.row >= rank || drawn.col >= rank ||
            drawn.row == drawn.col)
            throw std::invalid_argument("tile_model: draw two different dimensions of 0.." +
                                        std::to_string(rank - 1));
    } else {
        if (drawn.row >= 0 || drawn.col > 0 || (rank == 0 && drawn.col == 0))
            throw std::invalid_argument("tile_model: " + layout.tensor + " has rank " +
                                        std::to_string(rank));
        drawn = {-1, rank == 1 ? 0 : -1};
    }

    const MeshView m = view_of(mesh);
    TileModel out;
    out.tensor = layout.tensor;
    out.indices.assign(layout.indices.begin(), layout.indices.end());
    out.global_shape.assign(layout.global_shape.begin(), layout.global_shape.end());
    out.placements.assign(layout.placements.begin(), layout.placements.end());
    for (const auto& a : mesh.axes)
        out.axis_names.push_back(a.name);

    // Per drawn dimension, per cut: the mesh positions holding it (all when not drawn).
    std::vector<std::size_t> everyone(m.coords.size());
    for (std::size_t p = 0; p < everyone.size(); ++p)
        everyone[p] = p;
    std::vector<std::vector<std::size_t>> row_holders{everyone}, col_holders{everyone};
    if (drawn.row >= 0) {
        auto c = cut_dimension(layout, drawn.row, m);
        out.row = std::move(c.dim);
        row_holders = std::move(c.holders);
    }
    if (drawn.col >= 0) {
        auto c = cut_dimension(layout, drawn.col, m);
        out.col = std::move(c.dim);
        col_holders = std::move(c.holders);
    }
    for (int d = 0; d < rank; ++d)
        if (d != drawn.row && d != drawn.col)
            out.others.push_back(other_dimension(layout, d, m, out.axis_names));

    for (std::size_t k = 0; k < layout.placements.size(); ++k)
        if (layout.placements[k].kind == Placement::Kind::Partial)
            out.partial.push_back(
                {static_cast<int>(k), mesh.axes[k].name,
                 std::string(semantics::partial_op_name(layout.placements[k].reduce))});

    // Panels: per mesh position, its slice of every sharded undrawn dimension (-1: it holds
    // nothing of one of them).
    std::vector<int> sharded_others;
    for (const auto& o : out.others)
        if (o.shards > 1) sharded_others.push_back(o.dim);
    std::vector<int> panel_of(m.coords.size(), 0);
    out.panels.push_back({});
    if (!sharded_others.empty()) {
        std::map<PanelKey, int> index;
        std::vector<PanelKey> keys(m.coords.size());
        for (std::size_t p = 0; p < m.coords.size(); ++p) {
            if (panel_key(layout, sharded_others, m, p, keys[p]))
                index.emplace(keys[p], 0);
            else
                panel_of[p] = -1;
        }
        if (index.size() > 1 && index.size() <= kMaxPanels) {
            out.panels.clear();
            for (auto& [key, i] : index) {
                i = static_cast<int>(out.panels.size());
                Panel panel;
                std::string label;
                for (std::size_t j = 0; j < key.size(); ++j) {
                    std::vector<Range> ranges;
                    for (const auto& [b, e] : key[j])
                        ranges.push_back({b, e});
                    label += (label.empty() ? "" : ", ") +
                             slice_label(layout, sharded_others[j], ranges);
                    panel.slices.push_back(std::move(ranges));
                }
                panel.label = std::move(label);
                out.panels.push_back(std::move(panel));
            }
            for (std::size_t p = 0; p < m.coords.size(); ++p)
                if (panel_of[p] >= 0) panel_of[p] = index.at(keys[p]);
        } else {
            out.panels_folded = index.size() > kMaxPanels;
            std::fill(panel_of.begin(), panel_of.end(), 0);
        }
    }

    for (std::size_t p = 0; p < m.coords.size(); ++p)
        out.devices.push_back({m.ids[p], m.coords[p], {}});
    for (int pi = 0; pi < static_cast<int>(out.panels.size()); ++pi)
        for (int r = 0; r < out.rows(); ++r)
            for (int c = 0; c < out.cols(); ++c) {
                Tile t;
                t.panel = pi;
                t.row = r;
                t.col = c;
                if (out.row) t.rows = out.row->cuts[static_cast<std::size_t>(r)];
                if (out.col) t.cols = out.col->cuts[static_cast<std::size_t>(c)];
                std::vector<std::size_t> both;
                std::set_intersection(row_holders[static_cast<std::size_t>(r)].begin(),
                                      row_holders[static_cast<std::size_t>(r)].end(),
                                      col_holders[static_cast<std::size_t>(c)].begin(),
                                      col_holders[static_cast<std::size_t>(c)].end(),
                                      std::back_inserter(both));
                const int index = static_cast<int>(out.tiles.size());
                for (auto p : both) {
                    if (panel_of[p] != pi) continue;
                    t.holders.push_back(m.ids[p]);
                    out.devices[p].tiles.push_back(index);
                }
                std::sort(t.holders.begin(), t.holders.end());
                out.tiles.push_back(std::move(t));
            }
    // Every index as this layout shards it (index_text.cpp), not as the statement wrote it.
    name_indices(out, mesh, layout);
    return out;
}

} // namespace shardscope::render
