// Pipeline parallelism's totals (issue 18; the performance book's "Pipelining"): a
// `repeat l_{pp}=N microbatches=M schedule=gpipe|1f1b` block puts N/P consecutive layers on
// each of the P stages of mesh axis pp. The model, stated:
// - Each device runs only its stage's layers (stage_plan: the block's count becomes N/P), so
//   its compute, weights, gradients and optimizer state are those of N/P layers.
// - The step's batch flows through in M micro-batches. One micro-batch through one stage
//   takes t = (the stage's layers' time for the whole batch) / M + its sends (the carried
//   activation, one micro-batch, to the next stage: a permute over pp). The schedule then
//   takes (M + P - 1) * t for GPipe and 1F1B alike: the bubble is (P - 1) * t, a fraction
//   (P - 1) / (M + P - 1) of it. The rest of the program adds as the overlap model says.
// - Activations in flight on the first stage: GPipe keeps all M micro-batches' activations
//   (every forward before any backward), 1F1B keeps min(P, M); the activation peak of the
//   stage's plan (a whole batch) scales by in-flight / M.
// - Sends per device per step: M per pipelined block (forward: stage k to k+1, a reverse
//   block's: back), each one micro-batch of the carried tensor's block.
#pragma once

#include "plan.hpp"

#include <cstdint>
#include <string>

namespace shardscope::semantics {

struct ProgramTotals;

/// The pipeline's part of the program totals (ProgramTotals::pipeline).
struct PipelineTotals {
    bool pipelined = false;
    std::string axis;              ///< the pipeline's mesh axis, by name
    std::int64_t stages = 1;       ///< P
    std::int64_t microbatches = 1; ///< M
    std::int64_t layers_per_stage = 1;
    std::string schedule;       ///< "gpipe" or "1f1b"
    double stage_s = 0;         ///< the stage's layers, whole batch, serial (all blocks)
    double send_s = 0;          ///< one micro-batch's sends (every block)
    double microbatch_s = 0;    ///< t = stage_s / M + send_s
    double pipeline_s = 0;      ///< (M + P - 1) * t
    double bubble_s = 0;        ///< (P - 1) * t: idle
    double bubble_fraction = 0; ///< (P - 1) / (M + P - 1)
    double send_bytes = 0;      ///< per device per step: every micro-batch's sends
    int send_count = 0;         ///< sends per device per step
    std::int64_t in_flight = 1; ///< micro-batches whose activations are held at once
    bool operator==(const PipelineTotals&) const = default;
};

/// (P - 1) / (M + P - 1): the idle fraction of a GPipe or 1F1B schedule.
double bubble_fraction(std::int64_t stages, std::int64_t microbatches);
/// (M + P - 1) * t: a schedule's time, t being one micro-batch through one stage.
double pipeline_time(double microbatch_stage_s, std::int64_t stages, std::int64_t microbatches);
/// Micro-batches whose activations the first stage holds at once: gpipe M, 1f1b min(P, M).
std::int64_t microbatches_in_flight(const std::string& schedule, std::int64_t stages,
                                    std::int64_t microbatches);

/// Whether some repeat block of `plan` is pipelined.
bool is_pipelined(const Plan& plan);
/// The plan one device runs: each pipelined block holds its stage's N/P layers (its count
/// and its statements' repeat), and is no longer marked pipelined.
Plan stage_plan(const Plan& plan);
/// Adds the pipeline to totals computed from stage_plan(plan) (see the model above): the
/// bubble and the sends to the step time, the sends to the traffic, the activations in flight.
void apply_pipeline(const Plan& plan, ProgramTotals& t);
/// The "pipeline" line of `check`'s totals ("" when not pipelined).
std::string format_pipeline(const PipelineTotals& p);

} // namespace shardscope::semantics
