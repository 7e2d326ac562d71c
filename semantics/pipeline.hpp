// Pipeline parallelism's totals (issue 18; the performance book's "Pipelining"): a
// `repeat l_{pp}=N microbatches=M schedule=gpipe|1f1b` block puts N/P consecutive layers on
// each of the P stages of mesh axis pp. The model, stated:
// - Each device runs only its stage's layers (stage_plan: the block's count becomes N/P), so
//   its compute, weights, gradients and optimizer state are those of N/P layers.
// - A pipeline is a pipelined block with the reverse blocks that read it (a forward and its
//   backward), with that forward block's P, M and schedule; each pipeline is priced on its
//   own, and a program may have several.
// - The step's batch flows through in M micro-batches. One micro-batch through one stage
//   takes t = stage_s / M + its sends, where stage_s is the stage's layers of the pipeline's
//   blocks, whole batch, under the program's overlap model (totals.hpp: two streams, the
//   block's layers run alone; overlap_time) and the sends are the carried activation, one
//   micro-batch, to the next stage (a permute over pp). The schedule then takes
//   (M + P - 1) * t for GPipe and 1F1B alike: the bubble is (P - 1) * t, a fraction
//   (P - 1) / (M + P - 1) of it.
// - The step: the stage's program under the overlap model (which holds each block's stage_s,
//   or more where the block waits for what runs before it), plus each pipeline's M sends and
//   its bubble. So the step is never shorter than any pipeline's (M + P - 1) * t.
// - Activations in flight on the first stage: GPipe keeps all M micro-batches' activations
//   (every forward before any backward), 1F1B keeps min(P, M); the activation peak of the
//   stage's plan (a whole batch) scales by in-flight / M (several pipelines: the largest
//   such fraction).
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
    double stage_s = 0;         ///< the stage's layers, whole batch, overlap model (its blocks)
    double send_s = 0;          ///< one micro-batch's sends (its blocks)
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
/// Adds the pipelines to totals computed from stage_plan(plan) (see the model above): each
/// one's bubble and sends to the step time, the sends to the traffic, the activations in
/// flight; fills ProgramTotals::pipelines and ::pipeline.
void apply_pipeline(const Plan& plan, ProgramTotals& t);
/// The "pipeline" line of `check`'s totals ("" when not pipelined).
std::string format_pipeline(const PipelineTotals& p);

} // namespace shardscope::semantics
