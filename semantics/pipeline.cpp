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
    auto& p = t.pipeline;
    const RepeatBlock* config = nullptr; // the first pipelined block gives P, M, the schedule
    for (const auto& b : plan.repeats) {
        if (!b.pipelined()) continue;
        if (!config) config = &b;
        // The stage's layers of this block, the whole batch, every step in turn.
        double layer_s = 0;
        for (std::size_t j = b.first; j < b.last && j < plan.statements.size(); ++j)
            for (const auto& st : plan.statements[j].steps)
                layer_s += st.time_s;
        p.stage_s += static_cast<double>(b.layers_per_stage()) * layer_s;
        for (const auto& s : b.sends) {
            if (b.stages <= 1) continue;
            p.send_s += s.time_s;
            p.send_bytes += static_cast<double>(b.microbatches) * s.bytes_per_device;
            p.send_count += static_cast<int>(b.microbatches);
        }
    }
    if (!config) return;
    p.pipelined = true;
    p.axis = plan.mesh.axes.at(static_cast<std::size_t>(config->axis)).name;
    p.stages = config->stages;
    p.microbatches = config->microbatches;
    p.layers_per_stage = config->layers_per_stage();
    p.schedule = config->schedule;
    const auto m = static_cast<double>(p.microbatches);
    p.microbatch_s = p.stage_s / m + p.send_s;
    p.pipeline_s = pipeline_time(p.microbatch_s, p.stages, p.microbatches);
    p.bubble_fraction = bubble_fraction(p.stages, p.microbatches);
    p.bubble_s = static_cast<double>(p.stages - 1) * p.microbatch_s;
    p.in_flight = microbatches_in_flight(p.schedule, p.stages, p.microbatches);

    // (M + P - 1) t = stage_s + M * send_s + (P - 1) t: the stage's work is in the totals
    // already; the sends (on the critical path) and the bubble add.
    const double sends_s = m * p.send_s;
    t.comm_s += sends_s;
    t.exposed_s += sends_s;
    t.step_s += sends_s + p.bubble_s;
    t.serial_s += sends_s + p.bubble_s;
    if (p.send_count > 0) {
        auto it = std::find_if(t.bytes_by_kind.begin(), t.bytes_by_kind.end(),
                               [](const KindBytes& k) { return k.kind == StepKind::Permute; });
        if (it == t.bytes_by_kind.end()) {
            it = t.bytes_by_kind.insert(
                std::find_if(t.bytes_by_kind.begin(), t.bytes_by_kind.end(),
                             [](const KindBytes& k) { return k.kind > StepKind::Permute; }),
                KindBytes{StepKind::Permute, 0, 0});
        }
        it->bytes += p.send_bytes;
        it->count += p.send_count;
        t.comm_bytes += p.send_bytes;
    }
    t.memory.activations *= static_cast<double>(p.in_flight) / m;
    t.mfu = t.step_s > 0 && t.peak_flops > 0 ? t.flops / (t.step_s * t.peak_flops) : 0;
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
