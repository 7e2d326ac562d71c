// A layout's indices written with the mesh axes of its own atoms (tiles.hpp). Its own file:
// in tiles.cpp, GCC 12 reported a false -Wfree-nonheap-object on tile_model's vectors.
#include "render/tiles.hpp"

namespace shardscope::render {

using semantics::Mesh;
using semantics::TensorLayout;

std::vector<std::string> layout_indices(const Mesh& mesh, const TensorLayout& layout) {
    std::vector<std::string> out(layout.indices.begin(), layout.indices.end());
    auto axis_name = [&](int k) {
        return k >= 0 && k < static_cast<int>(mesh.axes.size())
                   ? mesh.axes[static_cast<std::size_t>(k)].name
                   : std::to_string(k);
    };
    for (std::size_t d = 0; d < out.size(); ++d) {
        std::vector<std::string> parts;
        for (const auto& a : layout.atoms) {
            if (a.dim != static_cast<int>(d)) continue;
            std::string text = a.index.text();
            // As the checker writes a dimension (semantics::detail::dim_text): one axis
            // `_0`, `_tp`; several `_{0,1}`.
            if (a.axes.size() == 1) text += "_" + axis_name(a.axes[0]);
            if (a.axes.size() > 1) {
                std::string sub;
                for (int k : a.axes)
                    sub += (sub.empty() ? "" : ",") + axis_name(k);
                text += "_{" + sub + "}";
            }
            parts.push_back(std::move(text));
        }
        if (parts.empty()) continue;
        std::string joined;
        for (const auto& p : parts)
            joined += (joined.empty() ? "" : " ") + p;
        if (parts.size() > 1 || out[d].starts_with("(")) joined = "(" + joined + ")";
        out[d] = joined;
    }
    return out;
}

void name_indices(TileModel& out, const Mesh& mesh, const TensorLayout& layout) {
    out.indices = layout_indices(mesh, layout);
    if (out.row) out.row->index = out.indices.at(static_cast<std::size_t>(out.row->dim));
    if (out.col) out.col->index = out.indices.at(static_cast<std::size_t>(out.col->dim));
    for (auto& o : out.others)
        o.index = out.indices.at(static_cast<std::size_t>(o.dim));
}

} // namespace shardscope::render
