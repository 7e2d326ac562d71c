// Colours: one per device (distinct for every mesh up to thousands of devices), one per kind
// of plan step, and the fixed colours of the pictures.
#pragma once

#include "render/geometry.hpp"
#include "semantics/plan.hpp"

#include <cstdint>

namespace shardscope::render {

/// The colour of device `id` in a mesh of `count` devices: Tableau's 10 (up to 10 devices)
/// or 20 (up to 20), else evenly spaced hues in a golden-ratio order over three
/// saturation/value levels. Distinct for every id below `count` for meshes of up to 1024
/// devices (tested; larger meshes may repeat a few); never white or black.
Color device_color(std::int64_t id, std::int64_t count);

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
} // namespace colors

} // namespace shardscope::render
