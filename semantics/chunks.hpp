// Where a device's shard of a tensor lies: torch.chunk per mesh axis, nested over the axes
// that shard an index (as DTensor shards over several mesh axes). Shared by the executor and
// the views (no GL, no communicator).
#pragma once

#include "mesh_coords.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace shardscope::semantics {

/// A half-open range [begin, end) of positions along one index.
struct Range {
    std::int64_t begin = 0, end = 0;
    std::int64_t size() const { return end - begin; }
    bool operator==(const Range&) const = default;
};

/// [begin, end) of chunk `c` of `n` when `extent` elements are split as torch.chunk does:
/// chunks of ceil(extent/n), the last ones smaller or empty.
inline Range chunk(std::int64_t extent, std::int64_t n, std::int64_t c) {
    const std::int64_t size = (extent + n - 1) / n;
    const std::int64_t begin = std::min(c * size, extent);
    return {begin, std::min(begin + size, extent)};
}

/// The range of one atom (AtomLayout) held by the device at mesh coordinates `coords`, given
/// the mesh axes it is sharded over (major to minor: chunk over the first axis, then that
/// chunk over the next). `axis_sizes[k]` is the size of mesh axis k.
template <class Sizes>
Range atom_range(std::int64_t extent, std::span<const int> axes, const Sizes& axis_sizes,
                 const std::vector<int>& coords) {
    Range r{0, extent};
    for (int k : axes) {
        const auto sub =
            chunk(r.size(), static_cast<std::int64_t>(axis_sizes[static_cast<std::size_t>(k)]),
                  coords[static_cast<std::size_t>(k)]);
        r = {r.begin + sub.begin, r.begin + sub.end};
    }
    return r;
}

/// Member `q`'s chunk of `extent` in a group of mesh axes of sizes `sizes` (major to minor),
/// members numbered row-major over their coordinates: the nested chunks atom_range cuts over
/// those axes. One axis: chunk(extent, n, q).
template <class Sizes>
Range group_chunk(std::int64_t extent, const Sizes& sizes, std::int64_t q) {
    std::vector<std::int64_t> coord(sizes.size());
    row_major_coords(sizes, q, coord);
    Range r{0, extent};
    for (std::size_t j = 0; j < sizes.size(); ++j) {
        const auto sub = chunk(r.size(), static_cast<std::int64_t>(sizes[j]), coord[j]);
        r = {r.begin + sub.begin, r.begin + sub.end};
    }
    return r;
}

} // namespace shardscope::semantics
