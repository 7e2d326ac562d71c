// "Did you mean": the known name closest to a misspelt one (edit distance, with adjacent
// transpositions counting one), for unknown functions and tensors.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope {

/// Optimal-string-alignment distance between `a` and `b`.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i)
        d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j)
        d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i)
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

/// The candidate closest to `name` (the first of equals), or "" when none is close: at most
/// one edit for names of up to 4 characters, two for longer ones, and never `name` itself.
template <class Range>
std::string closest_name(std::string_view name, const Range& candidates) {
    if (name.size() > 64) return "";
    const std::size_t limit = name.size() <= 4 ? 1 : 2;
    std::string best;
    std::size_t best_distance = limit + 1;
    for (const auto& c : candidates) {
        const std::string_view cand(c);
        if (cand == name || cand.empty()) continue;
        const std::size_t longer = std::max(cand.size(), name.size());
        const std::size_t shorter = std::min(cand.size(), name.size());
        if (longer - shorter > limit) continue;
        const std::size_t dist = edit_distance(name, cand);
        if (dist < best_distance && dist < longer) {
            best_distance = dist;
            best = std::string(cand);
        }
    }
    return best;
}

} // namespace shardscope
