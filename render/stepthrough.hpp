// The step-through of a statement: its intermediates one step at a time, from the values
// and steps of its data flow (StatementPlan::values, ::steps).
#pragma once

#include "semantics/chunks.hpp"
#include "semantics/plan.hpp"

#include <cstdint>
#include <optional>
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
/// blocks: the tensor cut along the collective) to `to`; `reduce`: the receiver combines it
/// with its own part (Schedule::combine: adds it, or takes the max).
struct Transfer {
    std::int64_t from = 0, to = 0; ///< device ids
    int block = 0;
    bool reduce = false;
    /// A permute's message when the layouts are known (each written dimension one index):
    /// `part`, per written dimension, what it carries (the sender's block of the input
    /// intersected with the receiver's block of the output); `target`, the receiver's whole
    /// new block. Empty when unknown.
    std::vector<semantics::Range> part, target;
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
    /// A permute some of whose messages carry only part of the receiver's new block (the
    /// receiver holds the rest, or gets it from others); false when each is a whole block.
    bool parts = false;
    /// How a reduce step combines what it receives: the input's partial op on the axes.
    semantics::PartialOp combine = semantics::PartialOp::Sum;
    std::vector<ScheduleStep> steps;
};
/// `input` and `output` (the step's layouts, optional): a permute's messages get their
/// parts (Transfer::part), and a reduction its op (Schedule::combine, from the input's
/// partial placements on the step's axes).
Schedule collective_schedule(const semantics::Mesh& mesh, const semantics::Step& step,
                             const semantics::TensorLayout* input = nullptr,
                             const semantics::TensorLayout* output = nullptr);
/// The schedule of step `step` of `s`, with its input and output layouts from the values.
Schedule collective_schedule(const semantics::Plan& plan, const semantics::StatementPlan& s,
                             int step);

/// The layouts a step reads first and writes (a step performed inside the next: the next
/// step's output), from `s.values`; nullptr where there is none.
const semantics::TensorLayout* step_input(const semantics::StatementPlan& s, int step);
const semantics::TensorLayout* step_output(const semantics::StatementPlan& s, int step);

/// The block device `id` holds of `layout`, per written dimension; nullopt when a written
/// dimension is a group of several indices (its block is not one range).
std::optional<std::vector<semantics::Range>>
device_block(const semantics::Mesh& mesh, const semantics::TensorLayout& layout, std::int64_t id);

/// The name a value is shown under: the statement's target for the value it stores (the
/// evaluator names it after what it was computed from, `K`, or `%1`), else its layout's.
std::string value_name(const semantics::StatementPlan& s, int value);

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
