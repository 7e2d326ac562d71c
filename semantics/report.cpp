#include "report.hpp"

#include "parser/json.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace shardscope::semantics {

using nlohmann::json;

std::string format_seconds(double s) {
    char buf[32];
    if (s == 0) return "0 s"; // a unit, as every other time has
    if (s >= 1)
        std::snprintf(buf, sizeof buf, "%.3g s", s);
    else if (s >= 1e-3)
        std::snprintf(buf, sizeof buf, "%.3g ms", s * 1e3);
    else if (s >= 1e-6)
        std::snprintf(buf, sizeof buf, "%.3g us", s * 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.3g ns", s * 1e9);
    return buf;
}

std::string format_bytes(double b) {
    char buf[32];
    if (b >= 1e9)
        std::snprintf(buf, sizeof buf, "%.3g GB", b / 1e9);
    else if (b >= 1e6)
        std::snprintf(buf, sizeof buf, "%.3g MB", b / 1e6);
    else if (b >= 1e3)
        std::snprintf(buf, sizeof buf, "%.3g kB", b / 1e3);
    else
        std::snprintf(buf, sizeof buf, "%.0f B", b);
    return buf;
}

std::string format_flops(double f) {
    char buf[32];
    if (f >= 1e12)
        std::snprintf(buf, sizeof buf, "%.3g TFLOP", f / 1e12);
    else if (f >= 1e9)
        std::snprintf(buf, sizeof buf, "%.3g GFLOP", f / 1e9);
    else if (f >= 1e6)
        std::snprintf(buf, sizeof buf, "%.3g MFLOP", f / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.3g FLOP", f);
    return buf;
}

std::string join_or_none(const std::vector<std::string>& items) {
    if (items.empty()) return "none";
    std::string out;
    for (const auto& x : items)
        out += (out.empty() ? "" : ", ") + x;
    return out;
}

std::string placements_text(std::span<const Placement> placements, const Mesh* mesh) {
    // Named axes (not the default 0, 1, ...) label each placement.
    bool named = mesh != nullptr && mesh->axes.size() == placements.size();
    if (named) {
        named = false;
        for (const auto& a : mesh->axes)
            if (!a.name.empty() && !std::isdigit(static_cast<unsigned char>(a.name[0])))
                named = true;
    }
    std::string out;
    for (std::size_t k = 0; k < placements.size(); ++k) {
        if (named)
            out += (out.empty() ? "" : " ") + mesh->axes[k].name + ":" + placements[k].text();
        else
            out += (out.empty() ? "" : ", ") + placements[k].text();
    }
    return out.empty() ? "-" : out;
}

std::string alternative_text(const Alternative& a) {
    // The description is "KIND TENSOR over axis N (why): reason; ...": keep what comes
    // before the parenthesis or colon of each part.
    std::string out;
    std::size_t start = 0;
    int parts = 0;
    while (start < a.description.size()) {
        std::size_t end = a.description.find("; ", start);
        if (end == std::string::npos) end = a.description.size();
        std::string part = a.description.substr(start, end - start);
        const std::size_t cut = std::min(part.find(" ("), part.find(':'));
        if (cut != std::string::npos) part.resize(cut);
        if (!part.empty()) {
            out += (out.empty() ? "" : ", ") + part;
            ++parts;
        }
        start = end + 2;
    }
    if (parts != static_cast<int>(a.collectives.size()) || a.collectives.empty())
        return join_or_none(a.collectives);
    return out;
}

namespace {

std::string indices_text(std::span<const std::string> indices) {
    std::string out;
    for (const auto& i : indices)
        out += (out.empty() ? "" : " ") + i;
    return "[" + out + "]";
}

json layout_json(const TensorLayout& t, bool global) {
    json placements = json::array();
    for (const auto& p : t.placements)
        placements.push_back(p.text());
    json j = {{"tensor", t.tensor},
              {"indices", t.indices},
              {"placements", placements},
              {"local_shape", t.local_shape}};
    if (global) j["global_shape"] = t.global_shape;
    return j;
}

} // namespace

std::string format_tensor_line(const TensorLayout& t, const std::string& role, const Mesh* mesh) {
    // Sized by a first pass: a tensor of many dimensions or a long name made the line longer
    // than any fixed buffer, and it was cut off, newline and all.
    const auto indices = indices_text(t.indices), placements = placements_text(t.placements, mesh),
               local = shape_text(t.local_shape), global = shape_text(t.global_shape);
    auto print = [&](char* out, std::size_t size) {
        return std::snprintf(out, size, "  %-8s %-10s %-16s (%s)  local %s of %s\n", role.c_str(),
                             t.tensor.c_str(), indices.c_str(), placements.c_str(), local.c_str(),
                             global.c_str());
    };
    std::string line(static_cast<std::size_t>(std::max(print(nullptr, 0), 0)), '\0');
    print(line.data(), line.size() + 1);
    return line;
}

std::string shape_text(std::span<const std::int64_t> shape) {
    if (shape.empty()) return "scalar";
    std::string out;
    for (auto n : shape)
        out += (out.empty() ? "" : "×") + std::to_string(n);
    return out;
}

std::string format_plan(const Plan& plan, const std::string& path, bool color) {
    const char* bold = color ? "\033[1m" : "";
    const char* dim = color ? "\033[2m" : "";
    const char* reset = color ? "\033[0m" : "";
    std::string out;
    for (std::size_t i = 0; i < plan.statements.size(); ++i) {
        const auto& s = plan.statements[i];
        out += std::string(bold) + path + ":" + std::to_string(s.range.line) + ": " + s.pretty +
               reset + "\n";
        auto tensor_line = [&](const TensorLayout& t, const char* role) {
            out += format_tensor_line(t, role, &plan.mesh);
        };
        for (const auto& op : s.operands)
            tensor_line(op, "operand");
        tensor_line(s.result, "result");
        for (const auto& st : s.steps) {
            if (st.kind == StepKind::Slice || st.kind == StepKind::Split) {
                out += std::string("    ") + dim + std::string(step_kind_name(st.kind)) + "  " +
                       st.text.reason + reset + "\n";
                continue;
            }
            char buf[256];
            std::string what = std::string(step_kind_name(st.kind));
            if (!st.mesh_axes.empty()) {
                std::string axes;
                for (int k : st.mesh_axes)
                    axes += (axes.empty() ? "" : ",") +
                            plan.mesh.axes[static_cast<std::size_t>(k)].name;
                what += "(" + axes + ")";
            }
            std::snprintf(buf, sizeof buf, "    %-18s %-8s %10s", what.c_str(), st.tensor.c_str(),
                          format_seconds(st.cost.time_s).c_str());
            out += buf;
            if (st.kind == StepKind::Compute) {
                char f[64];
                std::snprintf(f, sizeof f, "  %.3g flop", st.cost.flops_per_device);
                out += f;
                if (!st.text.detail.empty()) out += "  " + st.text.detail;
            } else {
                out += "  " + format_bytes(st.cost.bytes_per_device) + "/device  " + st.text.reason;
            }
            out += "\n";
        }
        out += "  collectives: " + join_or_none(collectives_of(plan.mesh, s)) +
               (s.chosen ? "  (chosen: not computable as written)" : "") + "   time " +
               format_seconds(s.cost.time_s) + ", " + format_bytes(s.cost.comm_bytes_per_device) +
               " sent/device\n";
        for (const auto& a : s.alternatives)
            out += std::string("  ") + dim + "alternative: " + alternative_text(a) + "  " +
                   format_seconds(a.time_s) + reset + "\n";
        out += "\n";
        // A pipelined block's stage-to-stage sends, after its last statement.
        for (const auto& b : plan.repeats) {
            if (!b.pipelined() || b.last != i + 1) continue;
            const auto& axis = plan.mesh.axes.at(static_cast<std::size_t>(b.axis)).name;
            out += std::string(bold) + path + ":" + std::to_string(b.range.line) +
                   ": pipeline over " + axis + ": " + std::to_string(b.stages) + " stages x " +
                   std::to_string(b.layers_per_stage()) + " layers, " +
                   std::to_string(b.microbatches) + " micro-batches, " + b.schedule + reset + "\n";
            for (const auto& st : b.sends) {
                char buf[256];
                const std::string what = "permute(" + axis + ")";
                std::snprintf(buf, sizeof buf, "    %-18s %-8s %10s", what.c_str(),
                              st.tensor.c_str(), format_seconds(st.cost.time_s).c_str());
                out += std::string(buf) + "  " + format_bytes(st.cost.bytes_per_device) +
                       "/device  " + st.text.reason + "\n";
            }
            if (b.sends.empty()) out += "    no tensor is carried from layer to layer: no sends\n";
            out += "\n";
        }
    }
    return out;
}

namespace {

/// The repeat blocks: each one's line, index, count, and pipeline (null when not pipelined)
/// with its stage-to-stage sends.
json repeats_json(const Plan& plan) {
    json out = json::array();
    for (const auto& b : plan.repeats) {
        json pipeline = nullptr;
        if (b.pipelined()) {
            json sends = json::array();
            for (const auto& st : b.sends) {
                json pairs = json::array();
                for (const auto& [from, to] : st.pairs)
                    pairs.push_back({from, to});
                sends.push_back({{"tensor", st.tensor},
                                 {"bytes_per_device", st.cost.bytes_per_device},
                                 {"time_s", st.cost.time_s},
                                 {"pairs", pairs}});
                if (st.cost.protocol != NcclProtocol::None)
                    sends.back()["protocol"] = nccl_protocol_name(st.cost.protocol);
            }
            pipeline = {{"axis", plan.mesh.axes.at(static_cast<std::size_t>(b.axis)).name},
                        {"stages", b.stages},
                        {"microbatches", b.microbatches},
                        {"schedule", b.schedule},
                        {"sends", sends}};
        }
        out.push_back({{"line", b.range.line},
                       {"index", b.index},
                       {"count", b.count},
                       {"reverse", b.reverse},
                       {"pipeline", pipeline}});
    }
    return out;
}

} // namespace

json plan_to_json(const Plan& plan, const std::string& path, const std::vector<std::string>* wrt) {
    json diags = json::array();
    for (const auto& d : plan.diagnostics)
        diags.push_back(parser::to_json(d));
    json mesh = json::array();
    for (const auto& a : plan.mesh.axes)
        mesh.push_back({{"name", a.name}, {"size", a.size}});
    json statements = json::array();
    for (const auto& s : plan.statements) {
        json operands = json::array();
        for (const auto& op : s.operands)
            operands.push_back(layout_json(op, false));
        json steps = json::array();
        for (const auto& st : s.steps) {
            json step = {{"kind", step_kind_name(st.kind)},
                         {"mesh_axes", st.mesh_axes},
                         {"tensor", st.tensor},
                         {"bytes_per_device", st.cost.bytes_per_device},
                         {"flops_per_device", st.cost.flops_per_device},
                         {"time_s", st.cost.time_s},
                         {"reason", st.text.reason},
                         {"detail", st.text.detail}};
            // The NCCL protocol the collective's time assumes, where one does (cost.hpp).
            if (st.cost.protocol != NcclProtocol::None)
                step["protocol"] = nccl_protocol_name(st.cost.protocol);
            // The block movement of a redistribution step, where it has one.
            if (!st.from_index.name.empty()) step["from_index"] = st.from_index.text();
            if (!st.to_index.name.empty()) step["to_index"] = st.to_index.text();
            if (st.kind == StepKind::Permute) {
                json pairs = json::array();
                for (const auto& [from, to] : st.pairs)
                    pairs.push_back({from, to});
                step["pairs"] = pairs;
                if (st.shift != 0) step["shift"] = st.shift; // a ring step (Permute_{i_k})
            }
            steps.push_back(std::move(step));
        }
        json alternatives = json::array();
        for (const auto& a : s.alternatives)
            alternatives.push_back({{"collectives", a.collectives},
                                    {"time_s", a.time_s},
                                    {"description", a.description}});
        statements.push_back({{"line", s.range.line},
                              {"source", s.source},
                              {"pretty", s.pretty},
                              {"result", layout_json(s.result, true)},
                              {"operands", operands},
                              {"steps", steps},
                              {"collectives", collectives_of(plan.mesh, s)},
                              {"alternatives", alternatives},
                              {"chosen", s.chosen},
                              {"repeat", s.repeat},
                              {"cost",
                               {{"flops_per_device", s.cost.flops_per_device},
                                {"comm_bytes_per_device", s.cost.comm_bytes_per_device},
                                {"memory_bytes_per_device", s.cost.memory_bytes_per_device},
                                {"time_s", s.cost.time_s}}}});
        if (wrt && statements.size() <= wrt->size())
            statements.back()["wrt"] = (*wrt)[statements.size() - 1];
    }
    return {{"path", path},
            {"errors", plan.errors()},
            {"warnings", plan.warnings()},
            {"diagnostics", diags},
            {"mesh", mesh},
            {"dtype", plan.dtype},
            {"hardware", plan.hardware},
            {"statements", statements},
            {"repeats", repeats_json(plan)}};
}

} // namespace shardscope::semantics
