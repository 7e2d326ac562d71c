#include "render/timeline.hpp"

#include <algorithm>
#include <numeric>

namespace shardscope::render {

std::vector<Span> timeline_spans(const std::vector<double>& times, float width, float min_width) {
    const std::size_t n = times.size();
    std::vector<Span> out(n);
    if (n == 0) return out;
    std::vector<float> w(n, 0);
    double total = 0;
    for (double t : times)
        total += std::max(t, 0.0);
    if (total <= 0 || min_width * static_cast<float>(n) >= width) {
        std::fill(w.begin(), w.end(), width / static_cast<float>(n));
    } else {
        // Steps below the minimum get it; the rest share what is left by time. Repeat until
        // no proportional share falls below the minimum.
        std::vector<bool> pinned(n, false);
        for (bool changed = true; changed;) {
            changed = false;
            double free_time = 0;
            std::size_t npinned = 0;
            for (std::size_t i = 0; i < n; ++i) {
                if (pinned[i])
                    ++npinned;
                else
                    free_time += std::max(times[i], 0.0);
            }
            const float free_width = width - min_width * static_cast<float>(npinned);
            for (std::size_t i = 0; i < n; ++i) {
                if (pinned[i]) {
                    w[i] = min_width;
                    continue;
                }
                w[i] = free_time > 0
                           ? static_cast<float>(std::max(times[i], 0.0) / free_time) * free_width
                           : free_width / static_cast<float>(n - npinned);
                if (w[i] < min_width) {
                    pinned[i] = true;
                    changed = true;
                }
            }
        }
    }
    float x = 0;
    for (std::size_t i = 0; i < n; ++i) {
        out[i] = {x, x + w[i]};
        x += w[i];
    }
    out.back().x1 = width; // no rounding gap at the end
    return out;
}

std::vector<double> step_times(const semantics::StatementPlan& s) {
    std::vector<double> out;
    for (const auto& st : s.steps)
        out.push_back(st.cost.time_s);
    return out;
}

} // namespace shardscope::render
