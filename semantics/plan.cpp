#include "plan.hpp"

#include <tuple>

#include <algorithm>
#include <limits>

namespace shardscope::semantics {

std::int64_t Mesh::device_count() const {
    // Meshes read from text have at most 2^24 devices; one built otherwise saturates rather
    // than wrapping to a small count.
    std::int64_t n = 1;
    for (const auto& a : axes)
        if (__builtin_mul_overflow(n, a.size, &n)) return std::numeric_limits<std::int64_t>::max();
    return n;
}

std::string IndexId::text() const {
    return name + std::string(static_cast<std::size_t>(primes), '\'');
}

std::string_view partial_op_name(PartialOp op) {
    return op == PartialOp::Max ? "max" : "sum";
}

PartialOp partial_op_of(std::string_view name) {
    return name == "max" ? PartialOp::Max : PartialOp::Sum;
}

std::string Placement::text() const {
    switch (kind) {
    case Kind::Replicate:
        return "R";
    case Kind::Shard:
        return "S(" + std::to_string(dim) + ")";
    case Kind::Partial:
        return "P(" + std::string(partial_op_name(reduce)) + ")";
    }
    return "R";
}

std::string_view step_kind_name(StepKind kind) {
    switch (kind) {
    case StepKind::Compute:
        return "compute";
    case StepKind::AllReduce:
        return "all-reduce";
    case StepKind::AllGather:
        return "all-gather";
    case StepKind::ReduceScatter:
        return "reduce-scatter";
    case StepKind::AllToAll:
        return "all-to-all";
    case StepKind::Permute:
        return "permute";
    case StepKind::Slice:
        return "slice";
    case StepKind::Split:
        return "split";
    }
    return "compute";
}

bool is_collective(StepKind kind) {
    return kind == StepKind::AllReduce || kind == StepKind::AllGather ||
           kind == StepKind::ReduceScatter || kind == StepKind::AllToAll ||
           kind == StepKind::Permute;
}

std::string collective_text(const Mesh& mesh, StepKind kind, const std::vector<int>& axes) {
    std::string names;
    for (int k : axes)
        names += (names.empty() ? "" : ",") + mesh.axes.at(static_cast<std::size_t>(k)).name;
    return std::string(step_kind_name(kind)) + "(" + names + ")";
}

bool StatementPlan::same_content(const StatementPlan& o) const {
    // Every field but `range` (a new field belongs here too).
    return std::tie(source, pretty, result, operands, steps, collectives, alternatives, chosen,
                    cost, values, result_value, target, also_stored, assign, repeat) ==
           std::tie(o.source, o.pretty, o.result, o.operands, o.steps, o.collectives,
                    o.alternatives, o.chosen, o.cost, o.values, o.result_value, o.target,
                    o.also_stored, o.assign, o.repeat);
}

std::vector<std::pair<std::string, const TensorLayout*>> StatementPlan::stores() const {
    std::vector<std::pair<std::string, const TensorLayout*>> out;
    out.emplace_back(target, &result);
    for (int v : also_stored)
        if (v >= 0 && static_cast<std::size_t>(v) < values.size()) {
            const auto& l = values[static_cast<std::size_t>(v)].layout;
            out.emplace_back(l.tensor, &l);
        }
    return out;
}

int Plan::errors() const {
    return static_cast<int>(
        std::count_if(diagnostics.begin(), diagnostics.end(),
                      [](const auto& d) { return d.severity == Severity::Error; }));
}

int Plan::warnings() const {
    return static_cast<int>(
        std::count_if(diagnostics.begin(), diagnostics.end(),
                      [](const auto& d) { return d.severity == Severity::Warning; }));
}

} // namespace shardscope::semantics
