// The tile model drawn as text for a terminal (the REPL's `:viz`), in the manner of
// jax.debug.visualize_array_sharding: a box per tile labelled with the devices holding it,
// row and column ranges around the grid, the undrawn dimensions and the partial axes listed.
#pragma once

#include "render/tiles.hpp"

#include <string>

namespace shardscope::render {

struct TextTileOptions {
    /// ANSI background colours, one per set of holders (so one per device where each tile
    /// has a single holder); plain text when false.
    bool color = false;
    /// Columns available: tiles beyond them are elided (`⋯`), as are rows beyond max_rows.
    int width = 80;
    int max_rows = 32;
};

/// The drawing, several lines, each ending in '\n'. Partial tensors say so in the heading
/// and mark every label with Σ (sum) or `max`.
std::string draw_tiles(const TileModel& model, const TextTileOptions& options = {});

/// "0", "0,2", "0-3": device ids, ascending, with runs of three or more as ranges.
std::string holders_label(const std::vector<std::int64_t>& holders);

} // namespace shardscope::render
