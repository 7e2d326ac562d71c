#include "render/stepthrough.hpp"

#include <algorithm>
#include <set>

namespace shardscope::render {

Schedule collective_schedule(const semantics::Mesh& mesh, const semantics::Step& st) {
    using K = semantics::StepKind;
    Schedule out;
    if (st.kind != K::AllGather && st.kind != K::ReduceScatter && st.kind != K::AllReduce &&
        st.kind != K::AllToAll && st.kind != K::Permute)
        return out;
    if (st.kind == K::Permute) {
        if (st.pairs.empty()) return out;
        out.permute = true;
        const std::int64_t count = mesh.device_count();
        auto involved = [&](std::int64_t id) {
            return std::any_of(st.pairs.begin(), st.pairs.end(),
                               [&](const auto& p) { return p.first == id || p.second == id; });
        };
        for (std::int64_t p = 0; p < count; ++p) {
            const std::int64_t id =
                mesh.devices.empty() ? p : mesh.devices.at(static_cast<std::size_t>(p));
            if (count <= 16 || involved(id)) out.group.push_back(id);
        }
        std::set<std::int64_t> moving;
        for (const auto& [from, to] : st.pairs) {
            moving.insert(from);
            moving.insert(to);
        }
        const auto keep = count - static_cast<std::int64_t>(moving.size());
        // A device with several sources assembles its new block from their parts.
        std::set<std::int64_t> receivers;
        bool several = false;
        for (const auto& pair : st.pairs)
            several = several || !receivers.insert(pair.second).second;
        ScheduleStep s;
        out.rotation = st.shift != 0;
        if (out.rotation)
            s.title = "permute, one step round the ring: " + std::to_string(st.pairs.size()) +
                      " messages at once, each device sending its whole block to the next; " +
                      st.tensor + " moves forward by one block along " + st.from_index.text();
        else
            s.title =
                "permute, one step: " + std::to_string(st.pairs.size()) +
                (st.pairs.size() == 1 ? " message" : " messages") +
                (several ? " at once, each device sending each partner the part of the "
                           "partner's new block that it holds"
                         : " at once, each device sending the block its partner holds after it") +
                (keep > 0 ? "; the " + std::to_string(keep) +
                                (keep == 1 ? " other device keeps its own"
                                           : " other devices keep their own")
                          : std::string());
        for (const auto& [from, to] : st.pairs) {
            int block = 0;
            for (std::size_t i = 0; i < out.group.size(); ++i)
                if (out.group[i] == to) block = static_cast<int>(i);
            s.transfers.push_back({from, to, block, false});
        }
        out.steps.push_back(std::move(s));
        return out;
    }
    const std::size_t rank = mesh.axes.size();
    std::vector<bool> in_group(rank, false);
    for (int k : st.mesh_axes)
        if (k >= 0 && static_cast<std::size_t>(k) < rank)
            in_group[static_cast<std::size_t>(k)] = true;
    // Mesh positions row-major; the group: every other coordinate 0.
    const std::int64_t count = mesh.device_count();
    std::vector<int> c(rank, 0);
    for (std::int64_t p = 0; p < count; ++p) {
        bool first = true;
        for (std::size_t k = 0; k < rank; ++k)
            first = first && (in_group[k] || c[k] == 0);
        if (first)
            out.group.push_back(
                mesh.devices.empty() ? p : mesh.devices.at(static_cast<std::size_t>(p)));
        for (std::size_t k = rank; k-- > 0;) {
            if (++c[k] < mesh.axes[k].size) break;
            c[k] = 0;
        }
    }
    const auto n = static_cast<std::int64_t>(out.group.size());
    if (n < 2) return out;
    out.groups = count / n;
    auto id = [&](std::int64_t i) {
        return out.group[static_cast<std::size_t>(((i % n) + n) % n)];
    };
    auto mod = [&](std::int64_t i) { return static_cast<int>(((i % n) + n) % n); };
    const std::string r = std::to_string(n - 1);
    auto reduce_phase = [&](const std::string& prefix) {
        for (std::int64_t k = 1; k < n; ++k) {
            ScheduleStep s;
            s.title = prefix + "ring step " + std::to_string(k) + " of " + r +
                      ": each device sends a partial block to the next, which adds its own part";
            for (std::int64_t i = 0; i < n; ++i)
                s.transfers.push_back({id(i), id(i + 1), mod(i - k), true});
            out.steps.push_back(std::move(s));
        }
    };
    auto gather_phase = [&](const std::string& prefix) {
        for (std::int64_t k = 1; k < n; ++k) {
            ScheduleStep s;
            s.title = prefix + "ring step " + std::to_string(k) + " of " + r +
                      (k == 1 ? ": each device sends its own block to the next"
                              : ": each device passes on the block it received last");
            for (std::int64_t i = 0; i < n; ++i)
                s.transfers.push_back({id(i), id(i + 1), mod(i - k + 1), false});
            out.steps.push_back(std::move(s));
        }
    };
    switch (st.kind) {
    case K::AllGather:
        gather_phase("");
        break;
    case K::ReduceScatter:
        reduce_phase("");
        break;
    case K::AllReduce:
        reduce_phase("reduce-scatter ");
        gather_phase("all-gather ");
        break;
    default: // all-to-all: pairs at distance k
        for (std::int64_t k = 1; k < n; ++k) {
            ScheduleStep s;
            s.title = "step " + std::to_string(k) + " of " + r +
                      ": each device sends the block of the device " + std::to_string(k) +
                      " ahead to it";
            for (std::int64_t i = 0; i < n; ++i)
                s.transfers.push_back({id(i), id(i + k), mod(i + k), false});
            out.steps.push_back(std::move(s));
        }
        break;
    }
    return out;
}

std::vector<StepFrame> step_frames(const semantics::Plan& plan, const semantics::StatementPlan& s) {
    std::vector<StepFrame> out;
    StepFrame inputs;
    inputs.title = "inputs";
    for (std::size_t v = 0; v < s.values.size(); ++v)
        if (!s.values[v].load.empty()) inputs.before.push_back(static_cast<int>(v));
    inputs.explanation = inputs.before.empty() ? "no tensor is read"
                                               : "the tensors the statement reads, as laid out";
    out.push_back(inputs);
    for (std::size_t i = 0; i < s.steps.size(); ++i) {
        const auto& st = s.steps[i];
        StepFrame f;
        f.step = static_cast<int>(i);
        f.collective = semantics::is_collective(st.kind);
        std::string what = f.collective
                               ? semantics::collective_text(plan.mesh, st.kind, st.mesh_axes)
                               : std::string(semantics::step_kind_name(st.kind));
        if (!st.text.detail.empty()) what += " " + st.text.detail;
        f.title =
            std::to_string(i + 1) + ". " + what + (st.tensor.empty() ? "" : " of " + st.tensor);
        f.explanation = st.text.reason;
        f.before = st.inputs.to_vector();
        f.after = st.output;
        // Performed inside the next step: show where its data ends up.
        for (std::size_t j = i + 1; f.after < 0 && j < s.steps.size(); ++j)
            f.after = s.steps[j].output;
        out.push_back(f);
    }
    StepFrame result;
    result.title = "result: " + (s.target.empty() ? s.result.tensor : s.target);
    result.explanation = s.assign == semantics::Assign::Accumulate ? "added to the stored tensor"
                         : s.assign == semantics::Assign::Update   ? "stored in place"
                                                                   : "stored";
    result.after = s.result_value;
    out.push_back(result);
    return out;
}

std::vector<StepShot> step_sequence(const semantics::Plan& plan,
                                    const semantics::StatementPlan& s) {
    std::vector<StepShot> out;
    const auto frames = step_frames(plan, s);
    for (std::size_t i = 0; i < frames.size(); ++i) {
        const int frame = static_cast<int>(i);
        out.push_back({frame, 0});
        if (!frames[i].collective) continue;
        const auto schedule =
            collective_schedule(plan.mesh, s.steps.at(static_cast<std::size_t>(frames[i].step)));
        for (std::size_t k = 1; k <= schedule.steps.size(); ++k)
            out.push_back({frame, static_cast<int>(k)});
    }
    return out;
}

} // namespace shardscope::render
