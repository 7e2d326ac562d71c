// The step-through of a statement: its intermediates one step at a time, from the values
// and steps of its data flow (StatementPlan::values, ::steps).
#pragma once

#include "semantics/plan.hpp"

#include <cstdint>
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

/// One message of a collective's schedule: `from` sends block `block` (of the group's n
/// blocks: the tensor cut along the collective) to `to`; `reduce`: the receiver adds it to
/// its own part.
struct Transfer {
    std::int64_t from = 0, to = 0; ///< device ids
    int block = 0;
    bool reduce = false;
};

struct ScheduleStep {
    std::string title; ///< "ring step 2 of 3: each device passes on the block it received"
    std::vector<Transfer> transfers;
};

/// How a collective moves data, for the step-through's animation: over the devices of one
/// group (those at coordinate 0 on every axis the collective does not use, in ring order:
/// row-major over its axes; `groups` such groups do the same at once). All-gather: n-1 ring
/// steps, each device passing on the block it received last; reduce-scatter: n-1 ring steps
/// adding partial blocks, device i ending with block i whole; all-reduce: both; all-to-all:
/// n-1 steps of pairs, device i sending block j to device j; permute: one step of the plan's
/// `pairs` at once (the group: every device of the mesh in mesh order, or on more than 16
/// devices those that send or receive; `block`: the receiver's position in the group, whose
/// block of the output it receives). Empty (no steps) for other steps.
struct Schedule {
    std::vector<std::int64_t> group; ///< device ids in ring order
    std::int64_t groups = 1;
    bool permute = false;  ///< the pairs of a permute, not a ring or all-to-all
    bool rotation = false; ///< a permute written as Permute_{i_k}: each block to the next device
    std::vector<ScheduleStep> steps;
};
Schedule collective_schedule(const semantics::Mesh& mesh, const semantics::Step& step);

/// Frame 0: the inputs (values loaded from the program or constants); then one frame per step
/// (its inputs before, its output after; a step performed inside the next shows the next
/// step's output); last: the stored result.
std::vector<StepFrame> step_frames(const semantics::Plan& plan, const semantics::StatementPlan& s);

/// One picture of the step-through as the window shows it: a frame, and on a collective's
/// frame 0 (the whole collective) or the k-th step of its schedule.
struct StepShot {
    int frame = 0;
    int substep = 0;
};

/// Every picture of a statement's step-through in the order the window steps through them
/// (→ and the message slider's play): each frame, and after a collective's frame its message
/// steps 1..n. What `render --view steps --animate` and `--frames` export.
std::vector<StepShot> step_sequence(const semantics::Plan& plan, const semantics::StatementPlan& s);

} // namespace shardscope::render
