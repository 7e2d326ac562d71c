#include "pipeline.hpp"

#include "report.hpp"
#include "totals.hpp"

#include <algorithm>
#include <cstdio>

namespace shardscope::semantics {

double bubble_fraction(std::int64_t stages, std::int64_t microbatches) {
    const auto p = std::max<std::int64_t>(stages, 1), m = std::max<std::int64_t>(microbatches, 1);
    return static_cast<double>(p - 1) / static_cast<double>(m + p - 1);
}

double pipeline_time(double microbatch_stage_s, std::int64_t stages, std::int64_t microbatches) {
    const auto p = std::max<std::int64_t>(stages, 1), m = std::max<std::int64_t>(microbatches, 1);
    return static_cast<double>(m + p - 1) * microbatch_stage_s;
}

std::int64_t microbatches_in_flight(const std::string& schedule, std::int64_t stages,
                                    std::int64_t microbatches) {
    const auto p = std::max<std::int64_t>(stages, 1), m = std::max<std::int64_t>(microbatches, 1);
    return schedule == "gpipe" ? m : std::min(p, m);
}

bool is_pipelined(const Plan& plan) {
    return std::any_of(plan.repeats.begin(), plan.repeats.end(),
                       [](const RepeatBlock& b) { return b.pipelined(); });
}

Plan stage_plan(const Plan& plan) {
    Plan out = plan;
    for (auto& b : out.repeats) {
        if (!b.pipelined()) continue;
        b.count = b.layers_per_stage();
        for (std::size_t j = b.first; j < b.last && j < out.statements.size(); ++j)
            out.statements[j].repeat = b.count;
        b.axis = -1;
        b.sends.clear();
    }
    return out;
}

void apply_pipeline(const Plan& plan, ProgramTotals& t) {
    // The pipelines: a pipelined block, with the reverse blocks that read it.
    std::vector<PipelineTotals> pipes;
    std::vector<int> pipe_of(plan.repeats.size(), -1);
    for (std::size_t i = 0; i < plan.repeats.size(); ++i) {
        const auto& b = plan.repeats[i];
        if (!b.pipelined()) continue;
        int g = -1;
        if (b.reverse && b.forward >= 0 && static_cast<std::size_t>(b.forward) < i)
            g = pipe_of[static_cast<std::size_t>(b.forward)];
        if (g < 0) {
            g = static_cast<int>(pipes.size());
            PipelineTotals p;
            p.pipelined = true;
            p.axis = plan.mesh.axes.at(static_cast<std::size_t>(b.axis)).name;
            p.stages = b.stages;
            p.microbatches = std::max<std::int64_t>(b.microbatches, 1);
            p.layers_per_stage = b.layers_per_stage();
            p.schedule = b.schedule;
            pipes.push_back(std::move(p));
        }
        pipe_of[i] = g;
        auto& p = pipes[static_cast<std::size_t>(g)];
        // The stage's layers of this block, the whole batch, under the overlap model.
        p.stage_s += overlap_time(plan, b.first, b.last, b.layers_per_stage());
        for (const auto& s : b.sends) {
            if (b.stages <= 1) continue;
            p.send_s += s.cost.time_s;
            p.send_bytes += static_cast<double>(p.microbatches) * s.cost.bytes_per_device;
            p.send_count += static_cast<int>(p.microbatches);
        }
    }
    if (pipes.empty()) return;
    double sends_s = 0, bubbles_s = 0, send_bytes = 0, in_flight_share = 0;
    int send_count = 0;
    for (auto& p : pipes) {
        const auto m = static_cast<double>(p.microbatches);
        p.microbatch_s = p.stage_s / m + p.send_s;
        p.pipeline_s = pipeline_time(p.microbatch_s, p.stages, p.microbatches);
        p.bubble_fraction = bubble_fraction(p.stages, p.microbatches);
        p.bubble_s = static_cast<double>(p.stages - 1) * p.microbatch_s;
        p.in_flight = microbatches_in_flight(p.schedule, p.stages, p.microbatches);
        // (M + P - 1) t = stage_s + M * send_s + (P - 1) t: the stage's work is in the totals
        // already (the stage plan's overlap model); the sends (on the critical path) and the
        // bubble add.
        sends_s += m * p.send_s;
        bubbles_s += p.bubble_s;
        send_bytes += p.send_bytes;
        send_count += p.send_count;
        in_flight_share = std::max(in_flight_share, static_cast<double>(p.in_flight) / m);
    }
    // The summary: the one pipeline, or the first's configuration with every one's figures.
    auto& sum = t.pipeline;
    sum = pipes.front();
    for (std::size_t g = 1; g < pipes.size(); ++g) {
        sum.stage_s += pipes[g].stage_s;
        sum.send_s += pipes[g].send_s;
        sum.microbatch_s += pipes[g].microbatch_s;
        sum.pipeline_s += pipes[g].pipeline_s;
        sum.bubble_s += pipes[g].bubble_s;
        sum.send_bytes += pipes[g].send_bytes;
        sum.send_count += pipes[g].send_count;
    }
    if (pipes.size() > 1 && sum.pipeline_s > 0) sum.bubble_fraction = sum.bubble_s / sum.pipeline_s;
    t.pipelines = std::move(pipes);

    t.comm_s += sends_s;
    t.exposed_s += sends_s;
    t.step_s += sends_s + bubbles_s;
    t.serial_s += sends_s + bubbles_s;
    if (send_count > 0) {
        auto it = std::find_if(t.bytes_by_kind.begin(), t.bytes_by_kind.end(),
                               [](const KindBytes& k) { return k.kind == StepKind::Permute; });
        if (it == t.bytes_by_kind.end()) {
            it = t.bytes_by_kind.insert(
                std::find_if(t.bytes_by_kind.begin(), t.bytes_by_kind.end(),
                             [](const KindBytes& k) { return k.kind > StepKind::Permute; }),
                KindBytes{StepKind::Permute, 0, 0});
        }
        it->bytes += send_bytes;
        it->count += send_count;
        t.comm_bytes += send_bytes;
    }
    t.memory.activations *= in_flight_share;
    t.mfu = t.step_s > 0 && t.peak_flops > 0 ? t.model_flops / (t.step_s * t.peak_flops) : 0;
    t.fits = t.memory.total() <= t.hbm_bytes;
}

std::string format_pipeline(const PipelineTotals& p) {
    if (!p.pipelined) return {};
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * p.bubble_fraction);
    return "  pipeline " + p.axis + ": " + std::to_string(p.stages) + " stages x " +
           std::to_string(p.layers_per_stage) + " layers, " + std::to_string(p.microbatches) +
           " micro-batches, " + p.schedule +
           ": (M+P-1) x t = " + std::to_string(p.microbatches + p.stages - 1) + " x " +
           format_seconds(p.microbatch_s) + " = " + format_seconds(p.pipeline_s) + "; bubble " +
           buf + " (" + format_seconds(p.bubble_s) + "); sends " + format_bytes(p.send_bytes) +
           " (" + std::to_string(p.send_count) + "x permute(" + p.axis + ")); activations of " +
           std::to_string(p.in_flight) + " of " + std::to_string(p.microbatches) +
           " micro-batches in flight\n";
}

} // namespace shardscope::semantics
