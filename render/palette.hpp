// Colours: one per device (distinct for every mesh up to thousands of devices), one per kind
// of plan step, and the fixed colours of the pictures.
#pragma once

#include "render/geometry.hpp"
#include "semantics/plan.hpp"

#include <cstdint>
#include <vector>

namespace shardscope::render {

/// The colour of device `id` in a mesh of `count` devices: Tableau's 10 (up to 10 devices)
/// or 20 (up to 20), else evenly spaced hues in a golden-ratio order over three
/// saturation/value levels. Distinct for every id below `count` for meshes of up to 1024
/// devices (tested; larger meshes may repeat a few); never white or black.
Color device_color(std::int64_t id, std::int64_t count);

/// The colour of the device at mesh coordinates `coords` on a mesh of axis sizes `sizes`.
/// Up to 20 devices, or on a mesh with one axis of more than one device, device_color(id,
/// count). Larger meshes are coloured by coordinates, so that a device's colour says where
/// it is: the hue by the leading axes (flattened, major to minor; consecutive hues up to 12,
/// else a golden-ratio order so that neighbours differ), the lightness by the last axis (its
/// levels interleaved, so neighbours along it differ by about half the range). Distinct for
/// every device and for any two neighbours (coordinates one apart on one axis) of meshes up
/// to 256 devices (tested).
Color mesh_device_color(const std::vector<std::int64_t>& sizes, const std::vector<int>& coords,
                        std::int64_t id);

/// The fill of a replicated tile (several holders): a pale tint per set of mesh axes it is
/// replicated over (a bit mask of axis indices), unlike every device colour.
Color replicated_color(std::uint32_t axes_mask);

/// Black or white, whichever reads better on `background`.
Color text_on(Color background);

/// Compute steps, collectives and free steps (slice, split).
Color step_color(semantics::StepKind kind);

namespace colors {
inline constexpr Color kBackground{255, 255, 255, 255};
inline constexpr Color kText{20, 20, 20, 255};
inline constexpr Color kMuted{110, 110, 110, 255};
inline constexpr Color kGrid{60, 60, 60, 255};
inline constexpr Color kHatch{30, 30, 30, 150};
inline constexpr Color kError{220, 40, 40, 255};
inline constexpr Color kWarning{230, 160, 20, 255};
inline constexpr Color kPass{40, 160, 60, 255};
/// The outline of the tiles a hovered device holds (no device colour is this dark).
inline constexpr Color kHighlight{0, 0, 0, 255};
} // namespace colors

} // namespace shardscope::render
