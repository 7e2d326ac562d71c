#include "plan.hpp"

#include "mesh_coords.hpp"

#include "parser/functions.hpp"
#include "parser/printer.hpp"

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

std::vector<int> Mesh::coords_at(std::int64_t position) const {
    std::vector<int> c(axes.size());
    row_major_coords(
        axes.size(), [&](std::size_t k) { return axes[k].size; }, position, c);
    return c;
}

std::int64_t Mesh::position_of(std::int64_t id) const {
    const auto it = std::find(devices.begin(), devices.end(), id);
    return it == devices.end() ? id : static_cast<std::int64_t>(it - devices.begin());
}

std::vector<std::pair<std::int64_t, std::int64_t>>
Mesh::ring_pairs(const std::vector<int>& ring) const {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    const std::int64_t n = device_count();
    auto size_of = [&](std::size_t k) { return axes[k].size; };
    std::vector<int> c(axes.size());
    for (std::int64_t at = 0; at < n; ++at) {
        // The ring coordinates, minor first: add one with carry, wrapping at the end.
        row_major_coords(axes.size(), size_of, at, c);
        for (auto k = ring.rbegin(); k != ring.rend(); ++k) {
            auto& digit = c[static_cast<std::size_t>(*k)];
            if (++digit < axes[static_cast<std::size_t>(*k)].size) break;
            digit = 0; // wraps; carry into the next
        }
        const auto next = row_major_position(axes.size(), size_of, c);
        if (next != at) out.emplace_back(device_at(at), device_at(next));
    }
    std::sort(out.begin(), out.end());
    return out;
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

std::string_view reduce_fn_name(ReduceFn fn) {
    switch (fn) {
    case ReduceFn::Sum:
        return "sum";
    case ReduceFn::Max:
        return "max";
    case ReduceFn::Mean:
        return "mean";
    }
    return "sum";
}

std::optional<ReduceFn> reduce_fn_of(std::string_view name) {
    if (name == "sum") return ReduceFn::Sum;
    if (name == "max") return ReduceFn::Max;
    if (name == "mean") return ReduceFn::Mean;
    return std::nullopt;
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

std::string_view nccl_protocol_name(NcclProtocol p) {
    switch (p) {
    case NcclProtocol::LL:
        return "LL";
    case NcclProtocol::LL128:
        return "LL128";
    case NcclProtocol::Simple:
        return "Simple";
    default:
        return "";
    }
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

std::string collective_text(const Mesh& mesh, StepKind kind, std::span<const int> axes) {
    // Appended into one string: the concatenations of temporaries cost a block each once
    // the text outgrows the inline buffer ("reduce-scatter(dp)").
    const auto name = step_kind_name(kind);
    std::size_t size = name.size() + 2 + (axes.empty() ? 0 : axes.size() - 1);
    for (int k : axes)
        size += mesh.axes.at(static_cast<std::size_t>(k)).name.size();
    std::string out;
    out.reserve(size); // exact: inline when it fits
    out += name;
    out += '(';
    for (std::size_t i = 0; i < axes.size(); ++i) {
        if (i) out += ',';
        out += mesh.axes.at(static_cast<std::size_t>(axes[i])).name;
    }
    out += ')';
    return out;
}

bool StatementPlan::same_content(const StatementPlan& o) const {
    // Every field but `range` (a new field belongs here too).
    return std::tie(source, pretty, result, operands, steps, alternatives, chosen, cost, values,
                    result_value, target, also_stored, assign, repeat) ==
           std::tie(o.source, o.pretty, o.result, o.operands, o.steps, o.alternatives, o.chosen,
                    o.cost, o.values, o.result_value, o.target, o.also_stored, o.assign, o.repeat);
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

std::vector<std::string> collectives_of(const Mesh& mesh, const std::vector<Step>& steps) {
    std::vector<std::string> out;
    for (const auto& s : steps)
        if (is_collective(s.kind)) out.push_back(collective_text(mesh, s.kind, s.mesh_axes));
    return out;
}

std::vector<std::string> collectives_of(const Mesh& mesh, const StatementPlan& statement) {
    return collectives_of(mesh, statement.steps);
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

Training training_of(const ast::Program& program) {
    Training t;
    for (const auto& item : program.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        if (s == nullptr) continue;
        if (const auto* p = std::get_if<ast::ParamDecl>(&s->node)) {
            for (const auto& w : p->tensors) {
                auto key = parser::tensor_key(w.name, w.label);
                if (std::find(t.params.begin(), t.params.end(), key) == t.params.end())
                    t.params.push_back(std::move(key));
            }
        } else if (const auto* tr = std::get_if<ast::TrainDecl>(&s->node)) {
            t.train = true;
            t.optimizer = tr->optimizer;
            t.master = tr->master;
            t.recompute = tr->recompute == "full";
            t.zero = tr->zero;
        } else if (const auto* td = std::get_if<ast::TensorDecl>(&s->node)) {
            t.tensor_bytes[parser::tensor_key(td->name, td->label)] =
                dtype_size(td->dtype).value_or(4);
        }
    }
    return t;
}

} // namespace shardscope::semantics
