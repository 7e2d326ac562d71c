// The tile model: which device holds which block of a tensor, for drawing (the REPL's `:viz`,
// the GUI's tiling view). GL-free and independent of the executor: from a `const Mesh&` and a
// `const TensorLayout&` of the Plan, nothing else.
//
// Two written dimensions are drawn, rows and columns (by default the last two; a tensor of
// rank 1 has columns only, a scalar a single tile). Each drawn dimension is cut into pieces at
// every shard boundary of its atoms (nested torch.chunk, semantics/chunks.hpp, uneven chunks
// and empty ones as DTensor makes them); a tile is a (row piece, column piece) block and is
// held by every device whose shard covers it: one holder when sharded along both, several
// when replicated (or when the devices differ only along undrawn dimensions, see below).
//
// Groups. A written dimension may be a group of several atoms, `(r_0 c)`, stored major to
// minor. When only its major atom is sharded (or atoms next to it, down to the last sharded
// one, with every atom minor of that one unsharded), each shard is one contiguous range and
// the cut is the plain one. When a sharded atom is minor of another atom, `(c r_0)`, a shard
// is strided: for every value of the atoms major of it, one contiguous run. The dimension is
// then cut at every value of those major atoms times every chunk of the sharded one, so the
// tiles interleave and a device holds several tiles of the dimension (its pattern repeats
// along it); adjacent pieces held by the same devices are merged. When that would make more
// than kMaxCuts pieces, the dimension is `folded`: the unsharded atoms major of the sharded
// ones are left out (`folded_atoms` names them) and the cuts are the shards themselves, in
// the order of the sharded atoms' chunks (major to minor). Each cut's range is then given in
// "shard coordinates": consecutive, with the shard's true element count as its size, but not
// a global position (each such tile stands for prod(folded extents) strided runs).
//
// Undrawn dimensions are listed (`others`) with the number of distinct shards they are cut
// into and the mesh axes cutting them. When an undrawn dimension is sharded, the drawing is
// split into small multiples (`panels`): one panel per distinct combination of the undrawn
// dimensions' shards (`f[0:8192]`), each with its own rows x cols tiles whose holders are
// exactly the devices holding that slice. A tile's holders therefore hold the very same block
// (a tile with several holders is truly replicated) unless the undrawn dimensions would make
// more than kMaxPanels panels: then there is one panel, `panels_folded` is set, and devices
// that differ only in the shard of an undrawn dimension are listed together (the pictures say
// so).
#pragma once

#include "semantics/chunks.hpp"
#include "semantics/plan.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardscope::render {

using semantics::Range;

/// Above this many pieces a drawn dimension is folded (see above).
inline constexpr std::size_t kMaxCuts = 256;
/// Above this many slices of the undrawn dimensions, they are not drawn as panels.
inline constexpr std::size_t kMaxPanels = 64;
/// Meshes with more devices are not modelled (std::invalid_argument): every device is listed.
inline constexpr std::int64_t kMaxDevices = 65536;

/// A drawn dimension and its cut.
struct TileDim {
    int dim = -1;            ///< the written dimension (0-based, a group counts as one)
    std::string index;       ///< as written: "b", "(r_0 c)"
    std::int64_t extent = 1; ///< global extent
    /// The pieces along it, in order: global [begin, end) ranges (shard coordinates when
    /// folded). Empty chunks are left out; a dimension of extent 0 has one piece [0, 0).
    std::vector<Range> cuts;
    bool folded = false;                   ///< see the header comment
    std::vector<std::string> folded_atoms; ///< the atoms left out when folded
};

/// A dimension that is not drawn.
struct OtherDim {
    int dim = -1;
    std::string index;
    std::int64_t extent = 1;
    std::int64_t shards = 1;       ///< distinct non-empty shards over all devices
    std::vector<std::string> axes; ///< the mesh axes cutting it (names, major to minor)
};

/// A mesh axis on which the tensor is partial: every holder has a part still to be reduced.
struct PartialAxis {
    int axis = 0;
    std::string name;           ///< the mesh axis name
    std::string reduce = "sum"; ///< "sum" or "max"
};

/// How the pictures mark a partial tensor, by its reduce ops: "Σ" (sum), "max", or "Σ/max"
/// when some axes sum and others take the max; "" when not partial.
std::string partial_mark(const std::vector<PartialAxis>& partial);
/// What its parts are parts of: "sum", "max", "sum or max".
std::string partial_whole(const std::vector<PartialAxis>& partial);

/// One small multiple: a slice of the sharded undrawn dimensions.
struct Panel {
    /// Per sharded undrawn dimension (in the order of TileModel::others with shards > 1): the
    /// range of each of its atoms, major to minor.
    std::vector<std::vector<Range>> slices;
    /// "f[0:8192]", "f[0:4096], e[0:2]" (indices without their mesh-axis subscripts); ""
    /// when there is one panel
    std::string label;
};

/// One block of the drawing.
struct Tile {
    int panel = 0;                     ///< index into TileModel::panels
    int row = 0, col = 0;              ///< position in the grid
    Range rows{0, 1};                  ///< along the row dimension ({0, 1} when there is none)
    Range cols{0, 1};                  ///< along the column dimension ({0, 1} when there is none)
    std::vector<std::int64_t> holders; ///< device ids (Mesh::devices), ascending
};

/// The tiles one device holds.
struct DeviceTiles {
    std::int64_t device = 0; ///< its id
    std::vector<int> coords; ///< its mesh coordinates
    std::vector<int> tiles;  ///< indices into TileModel::tiles (none: its shard is empty)
};

struct TileModel {
    std::string tensor;
    std::vector<std::string> indices;
    std::vector<std::int64_t> global_shape;
    std::vector<semantics::Placement> placements;
    std::vector<std::string> axis_names; ///< the mesh axes
    std::optional<TileDim> row;          ///< absent below rank 2
    std::optional<TileDim> col;          ///< absent for a scalar
    std::vector<OtherDim> others;        ///< undrawn dimensions, in order
    std::vector<Panel> panels;           ///< at least one
    bool panels_folded = false;          ///< more than kMaxPanels slices: one panel (above)
    std::vector<Tile> tiles;             ///< panel-major, then row-major: rows() x cols() each
    std::vector<PartialAxis> partial;    ///< empty when not partial
    std::vector<DeviceTiles> devices;    ///< every device, row-major over mesh coordinates

    int rows() const { return row ? static_cast<int>(row->cuts.size()) : 1; }
    int cols() const { return col ? static_cast<int>(col->cuts.size()) : 1; }
    const Tile& at(int r, int c, int panel = 0) const {
        return tiles.at((static_cast<std::size_t>(panel) * static_cast<std::size_t>(rows()) +
                         static_cast<std::size_t>(r)) *
                            static_cast<std::size_t>(cols()) +
                        static_cast<std::size_t>(c));
    }
    /// The tiles held by device `id` (nullptr if the mesh has no such device).
    const DeviceTiles* device(std::int64_t id) const;
};

/// The mesh axes (indices) along which a tile's holders differ, partial axes left out: the
/// axes it is replicated over. Empty for a single holder.
std::vector<int> replicated_axes(const TileModel& model, const Tile& tile);

/// An index without its mesh-axis subscripts: "r_0" -> "r", "b_{dp}" -> "b", "(r_0 c)" ->
/// "(r c)", "seq_X" -> "seq".
std::string logical_index(const std::string& index);

/// The written indices of `layout` with the mesh-axis subscripts of its own atoms (the axes
/// each index is sharded over in this layout, AtomLayout::axes), not those of the text it was
/// read from: an intermediate value of a redistribution keeps the indices as the statement
/// writes them (`j_0` while it is still `S(0)` along i), so "i_0 j" is what it holds.
/// Written as the checker writes a dimension: `i_0`, `f_tp`, `b_{dp,tp}`, `(r_0 c)`.
/// A dimension without atoms keeps its text.
std::vector<std::string> layout_indices(const semantics::Mesh& mesh,
                                        const semantics::TensorLayout& layout);

/// Sets `model`'s indices, and those of its drawn and undrawn dimensions, to
/// layout_indices(mesh, layout): what tile_model does last.
void name_indices(TileModel& model, const semantics::Mesh& mesh,
                  const semantics::TensorLayout& layout);

/// Which written dimensions to draw.
struct Drawn {
    int row = -1; ///< -1: the default (rank - 2)
    int col = -1; ///< -1: the default (rank - 1)
};

/// The tile model of `layout` on `mesh`. Throws std::invalid_argument when `drawn` names a
/// dimension out of range, the same dimension twice, or a row without a column, when the
/// layout does not fit the mesh (placements or atom axes for another mesh), and for meshes of
/// more than kMaxDevices devices.
TileModel tile_model(const semantics::Mesh& mesh, const semantics::TensorLayout& layout,
                     Drawn drawn = {});

} // namespace shardscope::render
