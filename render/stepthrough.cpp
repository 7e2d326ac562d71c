#include "render/stepthrough.hpp"

#include <algorithm>
#include <set>

namespace shardscope::render {

std::optional<std::vector<semantics::Range>>
device_block(const semantics::Mesh& mesh, const semantics::TensorLayout& layout, std::int64_t id) {
    if (layout.atoms.size() != layout.indices.size()) return std::nullopt;
    std::vector<std::int64_t> sizes;
    for (const auto& a : mesh.axes)
        sizes.push_back(a.size);
    const auto coords = mesh.coords_at(mesh.position_of(id));
    std::vector<semantics::Range> out;
    for (std::size_t a = 0; a < layout.atoms.size(); ++a) {
        const auto& atom = layout.atoms[a];
        if (atom.dim != static_cast<int>(a)) return std::nullopt;
        for (int k : atom.axes)
            if (k < 0 || static_cast<std::size_t>(k) >= sizes.size()) return std::nullopt;
        out.push_back(semantics::atom_range(atom.extent, atom.axes, sizes, coords));
    }
    return out;
}

const semantics::TensorLayout* step_input(const semantics::StatementPlan& s, int step) {
    if (step < 0 || step >= static_cast<int>(s.steps.size())) return nullptr;
    const auto& st = s.steps[static_cast<std::size_t>(step)];
    if (st.inputs.empty() || st.inputs[0] < 0 || st.inputs[0] >= static_cast<int>(s.values.size()))
        return nullptr;
    return &s.values[static_cast<std::size_t>(st.inputs[0])].layout;
}

const semantics::TensorLayout* step_output(const semantics::StatementPlan& s, int step) {
    if (step < 0) return nullptr;
    // Performed inside the next step: where its data ends up (as step_frames shows it).
    for (auto j = static_cast<std::size_t>(step); j < s.steps.size(); ++j) {
        const int v = s.steps[j].output;
        if (v >= 0)
            return v < static_cast<int>(s.values.size())
                       ? &s.values[static_cast<std::size_t>(v)].layout
                       : nullptr;
    }
    return nullptr;
}

std::string value_name(const semantics::StatementPlan& s, int value) {
    if (value < 0 || value >= static_cast<int>(s.values.size())) return {};
    if (value == s.result_value && !s.target.empty()) return s.target;
    return s.values[static_cast<std::size_t>(value)].layout.tensor;
}

Schedule collective_schedule(const semantics::Plan& plan, const semantics::StatementPlan& s,
                             int step) {
    if (step < 0 || step >= static_cast<int>(s.steps.size())) return {};
    return collective_schedule(plan.mesh, s.steps[static_cast<std::size_t>(step)],
                               step_input(s, step), step_output(s, step));
}

Schedule collective_schedule(const semantics::Mesh& mesh, const semantics::Step& st,
                             const semantics::TensorLayout* input,
                             const semantics::TensorLayout* output) {
    using K = semantics::StepKind;
    Schedule out;
    if (st.kind != K::AllGather && st.kind != K::ReduceScatter && st.kind != K::AllReduce &&
        st.kind != K::AllToAll && st.kind != K::Permute)
        return out;
    if (input)
        for (int k : st.mesh_axes)
            if (k >= 0 && static_cast<std::size_t>(k) < input->placements.size() &&
                input->placements[static_cast<std::size_t>(k)].kind ==
                    semantics::Placement::Kind::Partial &&
                input->placements[static_cast<std::size_t>(k)].reduce == semantics::PartialOp::Max)
                out.combine = semantics::PartialOp::Max;
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
        // What each message carries: the sender's block of the input within the receiver's
        // block of the output (the plan's `pairs` say who, the layouts what).
        for (const auto& [from, to] : st.pairs) {
            int block = 0;
            for (std::size_t i = 0; i < out.group.size(); ++i)
                if (out.group[i] == to) block = static_cast<int>(i);
            Transfer t{from, to, block, false, {}, {}};
            const auto have =
                input && output && !out.rotation ? device_block(mesh, *input, from) : std::nullopt;
            const auto want = have ? device_block(mesh, *output, to) : std::nullopt;
            if (have && want && have->size() == want->size()) {
                for (std::size_t d = 0; d < want->size(); ++d) {
                    const auto begin = std::max((*have)[d].begin, (*want)[d].begin);
                    t.part.push_back(
                        {begin, std::max(begin, std::min((*have)[d].end, (*want)[d].end))});
                }
                t.target = *want;
            }
            out.parts = out.parts || (t.part.empty() ? several : t.part != t.target);
            s.transfers.push_back(std::move(t));
        }
        if (out.rotation)
            s.title = "permute, one step round the ring: " + std::to_string(st.pairs.size()) +
                      " messages at once, each device sending its whole block to the next; " +
                      st.tensor + " moves forward by one block along " + st.from_index.text();
        else
            s.title =
                "permute, one step: " + std::to_string(st.pairs.size()) +
                (st.pairs.size() == 1 ? " message" : " messages") +
                (out.parts ? " at once, each device sending each partner the part of the "
                             "partner's new block that it holds"
                           : " at once, each device sending the block its partner holds after it") +
                (keep > 0 ? "; the " + std::to_string(keep) +
                                (keep == 1 ? " other device keeps its own"
                                           : " other devices keep their own")
                          : std::string());
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
                      (out.combine == semantics::PartialOp::Max
                           ? ": each device sends a partial block to the next, which takes the "
                             "max with its own part"
                           : ": each device sends a partial block to the next, which adds its "
                             "own part");
            for (std::int64_t i = 0; i < n; ++i)
                s.transfers.push_back({id(i), id(i + 1), mod(i - k), true, {}, {}});
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
                s.transfers.push_back({id(i), id(i + 1), mod(i - k + 1), false, {}, {}});
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
                s.transfers.push_back({id(i), id(i + k), mod(i + k), false, {}, {}});
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
        std::string detail = st.text.detail;
        while (!detail.empty() && detail.back() == ' ')
            detail.pop_back();
        if (detail.ends_with("->")) detail += " (scalar)"; // an einsum to a scalar: "x, y ->"
        if (!detail.empty()) what += " " + detail;
        // A computation names what it gives (the stored value by the statement's target: not
        // %1), a collective or a slice what it acts on.
        const bool compute = st.kind == semantics::StepKind::Compute;
        const std::string name = compute && st.output >= 0 && st.output == s.result_value
                                     ? value_name(s, st.output)
                                     : st.tensor;
        f.title = std::to_string(i + 1) + ". " + what +
                  (name.empty() ? "" : (compute ? ", giving " : " of ") + name);
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
        const auto schedule = collective_schedule(plan, s, frames[i].step);
        for (std::size_t k = 1; k <= schedule.steps.size(); ++k)
            out.push_back({frame, static_cast<int>(k)});
    }
    return out;
}

} // namespace shardscope::render
