// Row-major mesh positions: the one walk between a position (0 .. devices-1) and its
// coordinates, major axis first. The checker, the redistribution search, the pictures and the
// executor's communicator all number devices this way; each used to spell the walk out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace shardscope::semantics {

/// Writes into `out[0..n)` the coordinates of row-major position `at` over `n` axes whose
/// sizes `size_of(k)` gives (major to minor).
template <class SizeOf, class Out>
void row_major_coords(std::size_t n, SizeOf size_of, std::int64_t at, Out& out) {
    for (std::size_t k = n; k-- > 0;) {
        const auto s = static_cast<std::int64_t>(size_of(k));
        out[k] = static_cast<std::remove_cvref_t<decltype(out[k])>>(at % s);
        at /= s;
    }
}

/// The same over a container of sizes.
template <class Sizes, class Out>
void row_major_coords(const Sizes& sizes, std::int64_t at, Out& out) {
    row_major_coords(
        sizes.size(), [&](std::size_t k) { return sizes[k]; }, at, out);
}

/// The row-major position of coordinates `c[0..n)` over axes of sizes `size_of(k)`.
template <class SizeOf, class Coords>
std::int64_t row_major_position(std::size_t n, SizeOf size_of, const Coords& c) {
    std::int64_t at = 0;
    for (std::size_t k = 0; k < n; ++k)
        at = at * static_cast<std::int64_t>(size_of(k)) + static_cast<std::int64_t>(c[k]);
    return at;
}

} // namespace shardscope::semantics
