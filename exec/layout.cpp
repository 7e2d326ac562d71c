#include "exec/layout.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shardscope::exec {

using semantics::Placement;
using semantics::TensorLayout;

int LabelTable::of(const semantics::IndexId& i) {
    auto [it, added] = ids_.emplace(i, static_cast<int>(names_.size()));
    if (added) names_.push_back(i);
    return it->second;
}

std::vector<int> LabelTable::labels(const TensorLayout& t) {
    std::vector<int> out;
    for (const auto& a : t.atoms)
        out.push_back(of(a.index));
    return out;
}

int LabelTable::at(const semantics::IndexId& i) const {
    auto it = ids_.find(i);
    if (it == ids_.end()) throw ExecError("internal: index " + i.text() + " has no label");
    return it->second;
}

std::vector<int> LabelTable::labels_at(const TensorLayout& t) const {
    std::vector<int> out;
    for (const auto& a : t.atoms)
        out.push_back(at(a.index));
    return out;
}

void LabelTable::add(const semantics::Plan& plan) {
    for (const auto& s : plan.statements) {
        labels(s.result);
        for (const auto& v : s.values)
            labels(v.layout);
        for (const auto& st : s.steps)
            if (!st.index.name.empty()) of(st.index);
    }
}

Range atom_range(std::int64_t extent, std::span<const int> axes, const MeshShape& mesh,
                 const std::vector<int>& coords) {
    return semantics::atom_range(extent, axes, mesh.sizes, coords);
}

std::vector<std::int64_t> local_shape(const TensorLayout& t, const MeshShape& mesh,
                                      const std::vector<int>& coords) {
    std::vector<std::int64_t> out;
    for (const auto& a : t.atoms)
        out.push_back(atom_range(a.extent, a.axes, mesh, coords).size());
    return out;
}

std::vector<std::pair<int, semantics::PartialOp>> partial_axes(const TensorLayout& t) {
    std::vector<std::pair<int, semantics::PartialOp>> out;
    for (std::size_t k = 0; k < t.placements.size(); ++k)
        if (t.placements[k].kind == Placement::Kind::Partial)
            out.emplace_back(static_cast<int>(k), t.placements[k].reduce);
    return out;
}

MeshShape mesh_shape(const semantics::Mesh& m) {
    MeshShape s;
    for (const auto& a : m.axes)
        s.sizes.push_back(static_cast<int>(a.size));
    for (auto d : m.devices)
        s.devices.push_back(static_cast<int>(d));
    return s;
}

namespace {

/// Calls f(local_offset, global_offset) for every element of a block of `shape` placed at
/// `begin` in a tensor of `global_shape` (both row-major).
template <class F>
void for_each_in_block(const std::vector<std::int64_t>& shape,
                       const std::vector<std::int64_t>& begin,
                       const std::vector<std::int64_t>& global_shape, F&& f) {
    const std::size_t n = shape.size();
    std::int64_t count = 1;
    for (auto e : shape)
        count *= e;
    if (count == 0) return;
    std::vector<std::int64_t> stride(n, 1);
    for (std::size_t d = n; d-- > 1;)
        stride[d - 1] = stride[d] * global_shape[d];
    std::vector<std::int64_t> idx(n, 0);
    std::int64_t g = 0;
    for (std::size_t d = 0; d < n; ++d)
        g += begin[d] * stride[d];
    for (std::int64_t l = 0; l < count; ++l) {
        f(l, g);
        // Odometer over the block, keeping the global offset in step.
        for (std::size_t d = n; d-- > 0;) {
            if (++idx[d] < shape[d]) {
                g += stride[d];
                break;
            }
            g -= (shape[d] - 1) * stride[d];
            idx[d] = 0;
        }
    }
}

std::vector<std::int64_t> begins(const TensorLayout& t, const MeshShape& mesh,
                                 const std::vector<int>& coords) {
    std::vector<std::int64_t> out;
    for (const auto& a : t.atoms)
        out.push_back(atom_range(a.extent, a.axes, mesh, coords).begin);
    return out;
}

} // namespace

template <class T>
Tensor<T> shard_of(const Tensor<T>& global, const TensorLayout& t, const MeshShape& mesh,
                   const std::vector<int>& coords) {
    Tensor<T> out = Tensor<T>::zeros(local_shape(t, mesh, coords), global.labels);
    for_each_in_block(
        out.shape, begins(t, mesh, coords), global.shape, [&](std::int64_t l, std::int64_t g) {
            out.data[static_cast<std::size_t>(l)] = global.data[static_cast<std::size_t>(g)];
        });
    return out;
}

template <class T>
Tensor<T> assemble(const std::vector<Tensor<T>>& locals, const TensorLayout& t,
                   const std::vector<int>& labels, const MeshShape& mesh, double& replica_error) {
    std::vector<std::int64_t> shape;
    for (const auto& a : t.atoms)
        shape.push_back(a.extent);
    auto out = Tensor<T>::zeros(shape, labels);
    const auto partial = partial_axes(t);
    const bool max = !partial.empty() && partial.front().second == semantics::PartialOp::Max;
    if (max) std::fill(out.data.begin(), out.data.end(), -std::numeric_limits<T>::infinity());
    // Axes a layout neither shards nor is partial on hold replicas: coordinate 0 is the value,
    // the other coordinates must agree with it.
    std::vector<bool> replicated(mesh.sizes.size(), true);
    for (const auto& a : t.atoms)
        for (int k : a.axes)
            replicated[static_cast<std::size_t>(k)] = false;
    for (const auto& [k, op] : partial)
        replicated[static_cast<std::size_t>(k)] = false;
    replica_error = 0;
    const int n = mesh.device_count();
    for (int r = 0; r < n; ++r) {
        auto c = mesh.coords(r);
        bool primary = true;
        for (std::size_t k = 0; k < c.size(); ++k)
            primary &= !replicated[k] || c[k] == 0;
        const auto& local = locals[static_cast<std::size_t>(r)];
        if (local.shape != local_shape(t, mesh, c))
            throw ExecError("rank " + std::to_string(r) + " holds a " +
                            std::to_string(local.shape.size()) +
                            "-dimensional tensor of the wrong shape for " + t.tensor);
        if (primary) {
            for_each_in_block(local.shape, begins(t, mesh, c), shape,
                              [&](std::int64_t l, std::int64_t g) {
                                  auto& dst = out.data[static_cast<std::size_t>(g)];
                                  const T v = local.data[static_cast<std::size_t>(l)];
                                  dst = max ? std::max(dst, v) : dst + v;
                              });
        }
    }
    // Replicas: compare each non-primary copy with its primary.
    for (int r = 0; r < n; ++r) {
        auto c = mesh.coords(r);
        auto p = c;
        for (std::size_t k = 0; k < c.size(); ++k)
            if (replicated[k]) p[k] = 0;
        if (p == c) continue;
        const auto& a = locals[static_cast<std::size_t>(r)];
        const auto& b = locals[static_cast<std::size_t>(mesh.device_at(p))];
        for (std::size_t e = 0; e < a.data.size() && e < b.data.size(); ++e) {
            replica_error =
                std::max(replica_error, element_difference(static_cast<double>(a.data[e]),
                                                           static_cast<double>(b.data[e])));
        }
    }
    return out;
}

template Tensor<float> shard_of(const Tensor<float>&, const TensorLayout&, const MeshShape&,
                                const std::vector<int>&);
template Tensor<double> shard_of(const Tensor<double>&, const TensorLayout&, const MeshShape&,
                                 const std::vector<int>&);
template Tensor<float> assemble(const std::vector<Tensor<float>>&, const TensorLayout&,
                                const std::vector<int>&, const MeshShape&, double&);
template Tensor<double> assemble(const std::vector<Tensor<double>>&, const TensorLayout&,
                                 const std::vector<int>&, const MeshShape&, double&);

} // namespace shardscope::exec
