// Program totals (issue 18): a whole program's step time, traffic, FLOPs, MFU and peak memory
// per device, from its Plan (which holds the training declarations, `param` and `train`, as
// Plan::training). A pure function of the Plan; docs/guide.md "Program totals" states the model,
// README.md validates it.
//
// Overlap model: two in-order streams, one for compute and one for collectives (as a
// framework issues NCCL work on its own CUDA stream). The program runs in order, every
// repetition of a repeated block in turn; a statement's steps run one after the other, and its
// first step waits for the statements that wrote what it reads. So a collective overlaps only
// compute that does not need its result — an FSDP gather of a weight overlaps the compute
// before it, a tensor-parallel all-reduce whose sum the next statement reads does not.
// Exposed communication = the two streams' makespan (plus any recomputation) − compute; the
// no-overlap bound (compute + comm) is reported beside it.
#pragma once

#include "pipeline.hpp"
#include "plan.hpp"

#include "parser/ast.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardscope::semantics {

/// Bytes each device sends per step, one collective kind.
struct KindBytes {
    StepKind kind = StepKind::AllReduce;
    double bytes = 0;
    int count = 0; ///< collectives of this kind per step (repetitions counted)
    bool operator==(const KindBytes&) const = default;
};

/// Peak memory per device, by what it holds (bytes).
struct MemoryBreakdown {
    double weights = 0;     ///< `param` tensors in their stored layout
    double gradients = 0;   ///< one per weight, its layout and type (train only)
    double optimizer = 0;   ///< Adam moments (2 × f32) and master weights (train only)
    double activations = 0; ///< the peak of live non-weight tensors (see totals.cpp)
    double buffers = 0;     ///< the largest collective's output (received/gathered) block
    double total() const { return weights + gradients + optimizer + activations + buffers; }
    bool operator==(const MemoryBreakdown&) const = default;
};

/// A whole program's totals per device and per step.
struct ProgramTotals {
    bool training = false; ///< a `train` line: gradients and optimizer state included
    /// The file holds only the forward pass; these are the totals of it followed by the
    /// backward that `grad` derives (grad.hpp, step_totals)
    bool backward_derived = false;
    std::string hardware; ///< the preset priced against
    // Time.
    double compute_s = 0;   ///< compute steps (and recomputation), every repetition
    double comm_s = 0;      ///< collective steps, every repetition
    double exposed_s = 0;   ///< the communication the overlap model cannot hide
    double step_s = 0;      ///< compute_s + exposed_s
    double serial_s = 0;    ///< no-overlap bound: compute_s + comm_s
    double recompute_s = 0; ///< part of compute_s: the forward recomputed (recompute=full)
    // Traffic and work.
    std::vector<KindBytes> bytes_by_kind; ///< collectives that occur, in StepKind order
    double comm_bytes = 0;                ///< their sum
    double flops = 0;                     ///< FLOPs each device computes (recomputation excluded)
    /// The program's FLOPs per device counted once: work that several devices repeat on the
    /// same inputs (replicated over a mesh axis) counts once among them. MFU's numerator.
    double model_flops = 0;
    double peak_flops = 0; ///< the preset's peak for the program's type
    double mfu = 0;        ///< model_flops / (step_s · peak_flops)
    // Memory.
    MemoryBreakdown memory;
    double hbm_bytes = 0; ///< the preset's HBM per device
    bool fits = true;     ///< memory.total() <= hbm_bytes
    std::int64_t devices = 1;
    /// A pipelined program's schedule (pipeline.hpp states the model): with one pipeline,
    /// that pipeline; with several, the first's axis, P, M and schedule with every
    /// pipeline's times, sends and bubble summed.
    PipelineTotals pipeline;
    /// Each pipeline on its own (a forward block with the reverse blocks that read it), in
    /// program order; empty when not pipelined.
    std::vector<PipelineTotals> pipelines;
    bool operator==(const ProgramTotals&) const = default;
};

/// The totals of `plan` (its training configuration: Plan::training): every statement counts
/// StatementPlan::repeat times; a pipelined block's only its stage's layers, with the
/// pipeline's bubble and sends (pipeline.hpp).
ProgramTotals program_totals(const Plan& plan);

/// The overlap model's time for statements [first, last) of `plan` run `count` times in
/// turn, alone (no other statement before them): the two streams' makespan. A pipelined
/// block's stage time (pipeline.hpp).
double overlap_time(const Plan& plan, std::size_t first, std::size_t last, std::int64_t count);

/// The "Program totals" block of `check`'s text output (a few lines, each ending in '\n').
std::string format_totals(const ProgramTotals& t);

} // namespace shardscope::semantics
