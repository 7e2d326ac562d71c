#include "totals.hpp"

#include "cost.hpp"
#include "report.hpp"

#include "parser/functions.hpp"
#include "parser/printer.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <set>
#include <span>

namespace shardscope::semantics {

namespace {

/// How many devices compute the same block in a compute step: the product of the mesh axes
/// on which every input is replicated (neither sharded nor partial), where the devices along
/// the axis hold the same inputs and so do the same work. Model FLOPs count it once.
/// A pipelined block's statements skip its axis: its stages hold other layers, not copies.
double copies_computing(const Mesh& mesh, const StatementPlan& s, const Step& st,
                        int pipeline_axis) {
    if (st.inputs.empty()) return 1;
    double copies = 1;
    for (std::size_t k = 0; k < mesh.axes.size(); ++k) {
        if (static_cast<int>(k) == pipeline_axis) continue;
        bool replicated = true;
        for (int v : st.inputs) {
            if (v < 0 || v >= static_cast<int>(s.values.size())) return 1;
            const auto& placements = s.values[static_cast<std::size_t>(v)].layout.placements;
            if (k < placements.size() && placements[k].kind != Placement::Kind::Replicate)
                replicated = false;
        }
        if (replicated) copies *= static_cast<double>(mesh.axes[k].size);
    }
    return copies;
}

constexpr int kMaxCount = std::numeric_limits<int>::max(); ///< collectives of a kind per step

double elements(std::span<const std::int64_t> shape) {
    double n = 1;
    for (auto e : shape)
        n *= static_cast<double>(e);
    return n;
}

/// One named tensor of the program as the memory model sees it.
struct Live {
    double bytes = 0;     ///< per device, one copy (the largest layout it is stored in)
    int first = -1;       ///< statement index where it comes to exist (0 for inputs)
    int last = -1;        ///< the last statement that reads or writes it
    bool defined = false; ///< some statement writes it
    std::vector<int> defs;
};

/// The maximal run of consecutive statements around `i` with the same repeat count: one
/// repeated block as the flattened plan shows it.
std::pair<int, int> run_of(const Plan& plan, int i) {
    const auto r = plan.statements[static_cast<std::size_t>(i)].repeat;
    int a = i, b = i;
    while (a > 0 && plan.statements[static_cast<std::size_t>(a - 1)].repeat == r)
        --a;
    while (b + 1 < static_cast<int>(plan.statements.size()) &&
           plan.statements[static_cast<std::size_t>(b + 1)].repeat == r)
        ++b;
    return {a, b};
}

} // namespace

namespace {

/// Two in-order streams (totals.hpp, "Overlap model"): compute steps on one, collectives on
/// the other; each step of a statement after the statement's previous step, a statement's
/// first step after the statements that wrote what it reads.
struct TwoStreams {
    double compute_free = 0, comm_free = 0;
    std::map<std::string, double> written; // tensor -> when its last write ended
    void run(const StatementPlan& s) {
        double at = 0;
        for (const auto& op : s.operands)
            if (const auto w = written.find(op.tensor); w != written.end())
                at = std::max(at, w->second);
        for (const auto& st : s.steps) {
            double& stream = is_collective(st.kind) ? comm_free : compute_free;
            at = std::max(at, stream) + st.cost.time_s;
            stream = at;
        }
        for (const auto& [name, layout] : s.stores()) // a chain of products stores several
            if (!name.empty()) written[name] = at;
    }
    double makespan() const { return std::max(compute_free, comm_free); }

    /// Runs `block` (one repetition of a repeated block) `count` times. Up to kExact
    /// repetitions are run one by one. A longer run (a count may be any 63-bit number, and
    /// one at a time took hours) runs kExact and moves every time of the state on by the
    /// remaining repetitions times its average step over the last kWindow: the streams are
    /// max-plus (every time a maximum of earlier times plus costs), so the repetitions settle
    /// into a periodic pattern within a few rounds, and any period dividing kWindow is
    /// averaged exactly.
    template <typename Block>
    void repeat(std::int64_t count, Block&& block) {
        constexpr std::int64_t kExact = 4096, kWindow = 64;
        if (count <= kExact) {
            for (std::int64_t k = 0; k < count; ++k)
                block();
            return;
        }
        TwoStreams before;
        for (std::int64_t k = 0; k < kExact; ++k) {
            if (k == kExact - kWindow) before = *this;
            block();
        }
        const double rounds = static_cast<double>(count - kExact) / static_cast<double>(kWindow);
        auto advance = [&](double& now, double then) { now += (now - then) * rounds; };
        advance(compute_free, before.compute_free);
        advance(comm_free, before.comm_free);
        for (auto& [name, at] : written) {
            const auto was = before.written.find(name);
            advance(at, was == before.written.end() ? at : was->second);
        }
    }
};

/// The time the two streams take for the program: in program order, every repetition of a
/// repeated block in turn.
double two_stream_makespan(const Plan& plan) {
    const int n = static_cast<int>(plan.statements.size());
    TwoStreams streams;
    auto run = [&](int i) { streams.run(plan.statements[static_cast<std::size_t>(i)]); };
    for (int i = 0; i < n;) {
        const auto r = plan.statements[static_cast<std::size_t>(i)].repeat;
        if (r <= 1) {
            run(i++);
            continue;
        }
        // Not a structured binding: clang 14 cannot capture one in a lambda.
        const auto block = run_of(plan, i);
        const int a = block.first, b = block.second;
        streams.repeat(r, [&] {
            for (int j = a; j <= b; ++j)
                run(j);
        });
        i = b + 1;
    }
    return streams.makespan();
}

} // namespace

double overlap_time(const Plan& plan, std::size_t first, std::size_t last, std::int64_t count) {
    TwoStreams streams;
    streams.repeat(count, [&] {
        for (std::size_t i = first; i < last && i < plan.statements.size(); ++i)
            streams.run(plan.statements[i]);
    });
    return streams.makespan();
}

namespace {

/// The totals of a plan whose blocks are not pipelined; `blocks`: the repeat blocks as written
/// (a pipelined plan's, before stage_plan took their axes).
ProgramTotals flat_totals(const Plan& plan, const std::vector<RepeatBlock>& blocks);

} // namespace

ProgramTotals program_totals(const Plan& plan) {
    if (is_pipelined(plan)) { // per device: its stage's layers, then the schedule (pipeline.hpp)
        auto t = flat_totals(stage_plan(plan), plan.repeats);
        apply_pipeline(plan, t);
        return t;
    }
    return flat_totals(plan, plan.repeats);
}

namespace {

ProgramTotals flat_totals(const Plan& plan, const std::vector<RepeatBlock>& blocks) {
    const Training& training = plan.training;
    ProgramTotals t;
    t.training = training.train;
    const Hardware* hw = find_hardware(plan.hardware);
    if (hw == nullptr) hw = find_hardware("h100");
    t.hardware = std::string(hw->name);
    t.hbm_bytes = hw->hbm_bytes;
    t.devices = plan.mesh.device_count();
    const int dtype_bytes = dtype_size(plan.dtype).value_or(4);
    t.peak_flops = dtype_bytes <= 2 ? hw->flops_bf16 : hw->flops_f32;
    auto bytes_of = [&](const std::string& tensor) {
        auto it = training.tensor_bytes.find(tensor);
        return it != training.tensor_bytes.end() ? it->second : dtype_bytes;
    };
    auto layout_bytes = [&](const TensorLayout& l) {
        return elements(l.local_shape) * bytes_of(l.tensor);
    };

    // Time, traffic, work. Per repetition of each statement: its compute and its
    // collectives' time (the overlap model's runs).
    const int n = static_cast<int>(plan.statements.size());
    std::vector<double> compute_one(static_cast<std::size_t>(n), 0),
        comm_one(static_cast<std::size_t>(n), 0);
    std::map<StepKind, KindBytes> kinds;
    for (int i = 0; i < n; ++i) {
        const auto& s = plan.statements[static_cast<std::size_t>(i)];
        const double r = static_cast<double>(std::max<std::int64_t>(s.repeat, 0));
        int pipeline_axis = -1;
        for (const auto& b : blocks)
            if (b.pipelined() && static_cast<std::size_t>(i) >= b.first &&
                static_cast<std::size_t>(i) < b.last)
                pipeline_axis = b.axis;
        for (const auto& st : s.steps) {
            if (is_collective(st.kind)) {
                comm_one[static_cast<std::size_t>(i)] += st.cost.time_s;
                auto& k = kinds[st.kind];
                k.kind = st.kind;
                k.bytes += r * st.cost.bytes_per_device;
                // Saturated: a repeat count may be any 63-bit number (UBSan: 10^12 layers).
                k.count = static_cast<int>(
                    std::min(static_cast<double>(k.count) + r, static_cast<double>(kMaxCount)));
                // The buffer a collective fills: its output block (the gathered or received
                // data), or its input where the output is written by the next step.
                double buffer = 0;
                auto value_bytes = [&](int v) {
                    if (v < 0 || v >= static_cast<int>(s.values.size())) return 0.0;
                    return elements(s.values[static_cast<std::size_t>(v)].layout.local_shape) *
                           st.cost.elem_bytes;
                };
                buffer = value_bytes(st.output);
                for (int v : st.inputs)
                    buffer = std::max(buffer, value_bytes(v));
                t.memory.buffers = std::max(t.memory.buffers, buffer);
            } else {
                compute_one[static_cast<std::size_t>(i)] += st.cost.time_s;
                t.flops += r * st.cost.flops_per_device;
                t.model_flops += r * st.cost.flops_per_device /
                                 copies_computing(plan.mesh, s, st, pipeline_axis);
            }
        }
        t.compute_s += r * compute_one[static_cast<std::size_t>(i)];
        t.comm_s += r * comm_one[static_cast<std::size_t>(i)];
    }
    for (const auto& [kind, k] : kinds) {
        t.bytes_by_kind.push_back(k);
        t.comm_bytes += k.bytes;
    }

    // Weights, gradients, optimizer state: each `param` in the layout it is first stored in,
    // once per layer when it is a per-layer parameter of a repeated block.
    const std::set<std::string> params(training.params.begin(), training.params.end());
    std::set<std::string> grads;
    for (const auto& key : training.params) {
        if (training.train) grads.insert("g" + key);
        const TensorLayout* layout = nullptr;
        for (const auto& s : plan.statements) {
            for (const auto& op : s.operands)
                if (layout == nullptr && op.tensor == key) layout = &op;
            if (layout == nullptr && s.target == key) layout = &s.result;
            if (layout != nullptr) break;
        }
        if (layout == nullptr) continue; // never used: nothing to count
        // A per-layer parameter of a repeated block has a copy per layer (and so do its
        // gradient and optimizer state).
        double copies = 1;
        for (const auto& block : plan.repeats)
            if (!block.reverse &&
                std::binary_search(block.parameters.begin(), block.parameters.end(), key))
                copies = std::max(copies, static_cast<double>(block.count));
        const double elems = copies * elements(layout->local_shape);
        const int wb = bytes_of(key);
        t.memory.weights += elems * wb;
        if (!training.train) continue;
        // ZeRO stages 1 and 2 partition the state over the devices holding the same copy.
        double replicas = 1;
        for (std::size_t k = 0; k < layout->placements.size() && k < plan.mesh.axes.size(); ++k)
            if (layout->placements[k].kind == Placement::Kind::Replicate)
                replicas *= static_cast<double>(plan.mesh.axes[k].size);
        const double state = training.zero >= 1 ? elems / replicas : elems;
        t.memory.gradients += (training.zero >= 2 ? elems / replicas : elems) * wb;
        if (training.optimizer == "adam") t.memory.optimizer += 2 * 4 * state;
        if (training.master != "none") {
            const int mb = dtype_size(training.master).value_or(4);
            if (mb != wb) t.memory.optimizer += state * mb;
        }
    }

    // Activations: every other named tensor, live from its first write (inputs: from the
    // start) to its last read or write. A tensor written in a repeated block and live outside
    // that block is kept once per repetition (each layer saves its own), except that with
    // recompute=full only the block's inputs (read in the block before it writes them: the
    // checkpoints) are kept per repetition, the rest once (one layer recomputed at a time).
    std::map<std::string, Live> lives;
    for (int i = 0; i < n; ++i) {
        const auto& s = plan.statements[static_cast<std::size_t>(i)];
        std::set<std::string> read_here;
        for (const auto& op : s.operands) {
            if (params.count(op.tensor) || grads.count(op.tensor)) continue;
            auto& l = lives[op.tensor];
            if (l.first < 0) {
                l.first = 0; // read before any write: a program input
                l.bytes = layout_bytes(op);
            }
            // A chain of products lists each factor it moves once per side: the factor is
            // stored in its last layout from here on, which may be larger.
            if (!read_here.insert(op.tensor).second) l.bytes = std::max(l.bytes, layout_bytes(op));
            l.last = i;
        }
        for (const auto& [name, layout] : s.stores()) {
            if (name.empty() || params.count(name) || grads.count(name)) continue;
            auto& l = lives[name];
            if (l.first < 0) l.first = i;
            l.last = i;
            l.defined = true;
            l.defs.push_back(i);
            l.bytes = std::max(l.bytes, layout_bytes(*layout));
        }
    }
    std::vector<double> live_at(static_cast<std::size_t>(n), 0);
    std::set<int> recomputed; // statements whose results recompute=full recomputes
    for (const auto& [name, l] : lives) {
        double copies = 1;
        for (int d : l.defs) {
            const auto r = plan.statements[static_cast<std::size_t>(d)].repeat;
            if (r <= 1) continue;
            const auto [a, b] = run_of(plan, d);
            if (l.first >= a && l.last <= b) continue; // a temporary of one repetition
            bool checkpoint = false;                   // read in the block before written
            for (int i = a; i <= b && !checkpoint; ++i) {
                const auto& s = plan.statements[static_cast<std::size_t>(i)];
                for (const auto& op : s.operands)
                    checkpoint = checkpoint || op.tensor == name;
                bool stored = false; // (a loop: clang 14 captures no structured binding)
                for (const auto& w : s.stores())
                    stored = stored || w.first == name;
                if (stored) break;
            }
            if (training.recompute && !checkpoint) {
                recomputed.insert(d);
                continue;
            }
            copies = std::max(copies, static_cast<double>(r));
        }
        for (int i = std::max(l.first, 0); i <= l.last && i < n; ++i)
            live_at[static_cast<std::size_t>(i)] += l.bytes * copies;
    }
    for (double b : live_at)
        t.memory.activations = std::max(t.memory.activations, b);
    for (int d : recomputed)
        t.recompute_s += static_cast<double>(plan.statements[static_cast<std::size_t>(d)].repeat) *
                         compute_one[static_cast<std::size_t>(d)];
    t.compute_s += t.recompute_s;

    // The overlap model (totals.hpp): two in-order streams, dependencies respected.
    t.exposed_s = std::max(0.0, two_stream_makespan(plan) + t.recompute_s - t.compute_s);
    t.step_s = t.compute_s + t.exposed_s;
    t.serial_s = t.compute_s + t.comm_s;
    t.mfu = t.step_s > 0 && t.peak_flops > 0 ? t.model_flops / (t.step_s * t.peak_flops) : 0;
    t.fits = t.memory.total() <= t.hbm_bytes;
    return t;
}

} // namespace

std::string format_totals(const ProgramTotals& t) {
    char buf[160];
    std::string out =
        "Program totals (per device, per step; " + std::to_string(t.devices) +
        (t.devices == 1 ? " device, " : " devices, ") + t.hardware +
        (t.training ? ", training" : ", inference") +
        (t.backward_derived ? "; the forward as written + the backward grad derives" : "") + "):\n";
    out += "  time     " + format_seconds(t.step_s) + " = compute " + format_seconds(t.compute_s);
    if (t.recompute_s > 0) out += " (recompute " + format_seconds(t.recompute_s) + ")";
    out += " + exposed communication " + format_seconds(t.exposed_s);
    if (t.pipeline.pipelined) out += " + pipeline bubble " + format_seconds(t.pipeline.bubble_s);
    out += std::string(" (communication ") + format_seconds(t.comm_s) + "; no overlap " +
           format_seconds(t.serial_s) + ")\n";
    out += "  traffic  ";
    if (t.bytes_by_kind.empty()) out += "none";
    for (std::size_t i = 0; i < t.bytes_by_kind.size(); ++i) {
        const auto& k = t.bytes_by_kind[i];
        out += (i ? ", " : "") + std::string(step_kind_name(k.kind)) + " " + format_bytes(k.bytes) +
               " (" + std::to_string(k.count) + "x)";
    }
    out += "\n";
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * t.mfu);
    out += "  compute  " + format_flops(t.flops);
    // MFU counts work that devices repeat on the same inputs once: say so where some is.
    if (t.model_flops < t.flops * 0.9999)
        out += " (" + format_flops(t.model_flops) +
               " counted once: the rest repeats on devices that hold the same inputs)";
    out += ", MFU " + std::string(buf) + " of " + format_flops(t.peak_flops) + "/s\n";
    const auto& m = t.memory;
    out += "  memory   " + format_bytes(m.total()) + " = weights " + format_bytes(m.weights);
    if (t.training)
        out += " + gradients " + format_bytes(m.gradients) + " + optimizer " +
               format_bytes(m.optimizer);
    out +=
        " + activations " + format_bytes(m.activations) + " + buffers " + format_bytes(m.buffers);
    // Whole percents; a thousand and more in three digits (not a 300-digit number).
    const double percent = t.hbm_bytes > 0 ? 100 * m.total() / t.hbm_bytes : 0;
    std::snprintf(buf, sizeof buf, percent < 1000 ? " (%.0f%%)" : " (%.3g%%)", percent);
    out += (t.fits ? ": fits in " : ": does NOT fit in ") + format_bytes(t.hbm_bytes) + " HBM" +
           buf + "\n";
    for (const auto& p : t.pipelines)
        out += format_pipeline(p);
    return out;
}

} // namespace shardscope::semantics
