// Layout of a statement's plan as a timeline: each step a span whose length is proportional
// to its estimated time, with a minimum so that free and instant steps stay visible.
#pragma once

#include "semantics/plan.hpp"

#include <vector>

namespace shardscope::render {

struct Span {
    float x0 = 0, x1 = 0;
};

/// Spans for `times` filling [0, width): proportional to time, none narrower than
/// `min_width` (when width allows; else all equal). Zero total time: all equal.
std::vector<Span> timeline_spans(const std::vector<double>& times, float width, float min_width);

/// The estimated time of each step of a statement.
std::vector<double> step_times(const semantics::StatementPlan& s);

} // namespace shardscope::render
