// The step-through of a statement: its intermediates one step at a time, from the values
// and steps of its data flow (StatementPlan::values, ::steps).
#pragma once

#include "semantics/plan.hpp"

#include <string>
#include <vector>

namespace shardscope::render {

struct StepFrame {
    std::string title;       ///< "2. all-gather(0) of x"
    std::string explanation; ///< the step's reason, or what the frame shows
    int step = -1;           ///< index into StatementPlan::steps; -1: the inputs or the result
    bool collective = false;
    std::vector<int> before; ///< values shown on the left (read by the step)
    int after = -1;          ///< the value written (-1: none drawn)
};

/// Frame 0: the inputs (values loaded from the program or constants); then one frame per step
/// (its inputs before, its output after; a step performed inside the next shows the next
/// step's output); last: the stored result.
std::vector<StepFrame> step_frames(const semantics::Plan& plan, const semantics::StatementPlan& s);

} // namespace shardscope::render
