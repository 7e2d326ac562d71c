#include "python.hpp"

#include "codegen/preludes.hpp"

#include "parser/printer.hpp"

#include <algorithm>
#include <map>

namespace shardscope::codegen {

std::optional<ExportTarget> parse_export_target(std::string_view name) {
    if (name == "torch") return ExportTarget::Torch;
    if (name == "jax") return ExportTarget::Jax;
    if (name == "latex") return ExportTarget::Latex;
    return std::nullopt;
}

std::string export_program(const ast::Program& program, const semantics::Plan& plan,
                           ExportTarget target, const ExportOptions& options) {
    switch (target) {
    case ExportTarget::Torch:
        return export_torch(program, plan, options);
    case ExportTarget::Jax:
        return export_jax(program, plan, options);
    case ExportTarget::Latex:
        return export_latex(program, plan, options);
    }
    return {};
}

namespace detail {

using semantics::IndexId;
using semantics::OpKind;
using semantics::StepKind;
using semantics::TensorLayout;

std::vector<Planned> pair_statements(const ast::Program& program, const semantics::Plan& plan) {
    std::vector<Planned> out;
    for (const auto& item : program.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        if (!s || !(std::holds_alternative<ast::Equation>(s->node) ||
                    std::holds_alternative<ast::Chain>(s->node)))
            continue;
        if (out.size() >= plan.statements.size())
            throw ExportError("the checker did not plan every statement: fix the errors first");
        out.push_back({s, &plan.statements[out.size()]});
    }
    if (out.size() != plan.statements.size())
        throw ExportError("the plan does not belong to this program");
    return out;
}

std::string py_str(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

const semantics::RepeatBlock* block_of(const semantics::Plan& plan, std::size_t s) {
    for (const auto& b : plan.repeats)
        if (s >= b.first && s < b.last) return &b;
    return nullptr;
}

std::string load_key(const semantics::Plan& plan, std::size_t s, const std::string& key) {
    const auto* b = block_of(plan, s);
    if (!b || !std::binary_search(b->parameters.begin(), b->parameters.end(), key))
        return py_str(key);
    return "(" + py_str(key) + " if layer == 0 else " + py_str(key + "@") + " + str(layer))";
}

std::string python_program(const semantics::Plan& plan, const std::vector<std::string>& code) {
    auto indented = [](const std::string& text) {
        std::string out;
        std::size_t at = 0;
        while (at < text.size()) {
            auto end = text.find('\n', at);
            if (end == std::string::npos) end = text.size();
            const auto line = text.substr(at, end - at);
            out += (line.empty() ? "" : "    ") + line + "\n";
            at = end + 1;
        }
        return out;
    };
    auto keys = [](const std::vector<std::string>& names) {
        std::string out = "(";
        for (const auto& n : names)
            out += py_str(n) + ", ";
        return out + ")";
    };
    std::string out;
    std::size_t s = 0;
    for (std::size_t bi = 0; bi < plan.repeats.size(); ++bi) {
        const auto& b = plan.repeats[bi];
        for (; s < b.first; ++s)
            out += code.at(s);
        const auto n = std::to_string(b.count);
        const auto saved = "saved_" + std::to_string(bi);
        out += "\n    # ---- repeat " + b.index + "=" + n + (b.reverse ? " reverse" : "") +
               " (line " + std::to_string(b.range.line) + "): statements of lines " +
               std::to_string(plan.statements.at(b.first).range.line) + "-" +
               std::to_string(plan.statements.at(b.last - 1).range.line) + ", once per layer\n";
        if (b.pipelined())
            out += "    # pipelined over " +
                   plan.mesh.axes.at(static_cast<std::size_t>(b.axis)).name + " (" +
                   std::to_string(b.stages) + " stages, " + std::to_string(b.microbatches) +
                   " micro-batches, " + b.schedule +
                   "): here every device runs every layer; the values are the same\n";
        const bool restores = b.reverse && b.forward >= 0;
        const auto from = "saved_" + std::to_string(b.forward);
        if (!b.reverse) out += "    " + saved + " = []  # each layer's stored values\n";
        out += std::string("    for layer in ") + (b.reverse ? "reversed(range(" : "range(") + n +
               (b.reverse ? ")" : "") + "):\n";
        if (restores)
            out += "        state.update(" + from + "[layer])  # the forward layer's values\n";
        for (; s < b.last; ++s)
            out += indented(code.at(s));
        if (!b.reverse)
            out += "        " + saved + ".append({k: state[k] for k in " + keys(b.defines) +
                   " if k in state})\n";
        if (restores) out += "    state.update(" + from + "[" + n + " - 1])\n";
    }
    for (; s < code.size(); ++s)
        out += code[s];
    return out;
}

std::string statement_comment(const ast::Statement& s) {
    std::string t = parser::print(s);
    std::replace(t.begin(), t.end(), '\n', ' ');
    return t;
}

std::string python_header(const semantics::Plan& plan, const ExportOptions& options,
                          const std::string& what, const std::string& run) {
    std::string out = "#!/usr/bin/env python3\n";
    out += "# " + what + "\n";
    if (!options.source.empty()) out += "# Source: " + options.source + "\n";
    if (!options.command.empty()) out += "# Made by: " + options.command + "\n";
    std::string mesh;
    for (const auto& a : plan.mesh.axes)
        mesh += (mesh.empty() ? "" : " x ") + a.name + "=" + std::to_string(a.size);
    out += "# Mesh: " + mesh + " (" + std::to_string(plan.mesh.device_count()) + " devices)\n";
    out += "# Run: " + run + "\n";
    out += "# Inputs are shardscope exec's: --data random|arange|ints and --seed N give the same\n"
           "# numbers, so --values prints what 'shardscope exec' computes.\n";
    return out;
}

std::string python_inputs() {
    return "\n" + std::string(preludes::common);
}

std::vector<int> moved_factors(const semantics::StatementPlan& sp) {
    for (int v : sp.also_stored)
        if (v < 0 || static_cast<std::size_t>(v) >= sp.values.size() || v == sp.result_value)
            throw ExportError("line " + std::to_string(sp.range.line) + ": the plan stores value " +
                              std::to_string(v) +
                              ", which is not one of the statement's other values");
    return sp.also_stored;
}

std::string moved_factors_comment(const semantics::StatementPlan& sp) {
    const auto moved = moved_factors(sp);
    if (moved.empty()) return {};
    std::string names;
    for (int v : moved)
        names += sp.values[static_cast<std::size_t>(v)].layout.tensor + ", ";
    return "    # the chain of products stores every factor it moves, as exec does: " + names +
           "then " + sp.target + "\n";
}

std::string python_shape(const TensorLayout& t) {
    std::string out = "(";
    for (const auto& a : t.atoms)
        out += std::to_string(a.extent) + ",";
    if (t.atoms.size() > 1) out.pop_back();
    return out + ")";
}

namespace {

/// One letter per index of the statement, for einsum specs.
class Letters {
public:
    explicit Letters(const ast::SourceRange& statement) : statement_(statement) {}
    std::string of(const IndexId& i) {
        auto it = map_.find(i);
        if (it != map_.end()) return it->second;
        static const std::string alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
        if (map_.size() >= alphabet.size())
            throw ExportError("a statement with more than 52 indices cannot be an einsum",
                              statement_);
        auto l = std::string(1, alphabet[map_.size()]);
        map_[i] = l;
        return l;
    }
    std::string of(const TensorLayout& t) {
        std::string s;
        for (const auto& a : t.atoms)
            s += of(a.index);
        return s;
    }

private:
    ast::SourceRange statement_; ///< where an error points
    std::map<IndexId, std::string> map_;
};

std::string var(int id) {
    return "v" + std::to_string(id);
}

} // namespace

std::string python_steps(const semantics::Plan& plan, const semantics::StatementPlan& sp,
                         Backend backend, const std::string& indent) {
    Letters L(sp.range);
    for (const auto& v : sp.values)
        L.of(v.layout);
    L.of(sp.result);
    const bool torch = backend == Backend::Torch;
    std::string out;
    auto line = [&](const std::string& s) { out += indent + s + "\n"; };
    for (const auto& st : sp.steps) {
        if (st.output < 0) continue; // performed inside the next step (softmax statistics)
        const auto o = st.output;
        const auto& ol = sp.values.at(static_cast<std::size_t>(o)).layout;
        const auto os = L.of(ol);
        auto in = [&](std::size_t k) { return st.inputs.at(k); };
        auto il = [&](std::size_t k) -> const TensorLayout& {
            return sp.values.at(static_cast<std::size_t>(in(k))).layout;
        };
        std::string what = std::string(semantics::step_kind_name(st.kind));
        if (semantics::is_collective(st.kind))
            what = semantics::collective_text(plan.mesh, st.kind, st.mesh_axes);
        line("# " + what + (st.text.detail.empty() ? "" : ": " + st.text.detail) +
             (st.text.reason.empty() || st.kind == StepKind::Compute
                  ? ""
                  : " (" + st.text.reason + ")"));
        std::string rhs;
        if (st.kind == StepKind::Permute && st.shift != 0) {
            // A ring step (Permute_{i_k}): the value moves forward along one index; JAX rolls
            // it, torch sends each block as the plan's pairs say (preludes: ring_step).
            std::string pairs;
            for (const auto& [from, to] : st.pairs)
                pairs += "(" + std::to_string(from) + ", " + std::to_string(to) + "), ";
            rhs = "ring_step(" + var(in(0)) + ", " +
                  std::to_string(L.of(il(0)).find(L.of(st.from_index))) + ", " +
                  std::to_string(st.shift) + ", [" + pairs + "])";
        } else if (st.kind != StepKind::Compute || st.op == OpKind::None) {
            rhs = "regroup(" + var(in(0)) + ", " + py_str(L.of(il(0))) + ", " + py_str(os) + ", " +
                  python_shape(ol) + ")";
        } else {
            switch (st.op) {
            case OpKind::Einsum: {
                std::string spec, args;
                for (std::size_t k = 0; k < st.inputs.size(); ++k) {
                    spec += (k ? "," : "") + L.of(il(k));
                    args += ", " + var(in(k));
                }
                rhs = std::string(torch ? "torch" : "jnp") + ".einsum(" + py_str(spec + "->" + os) +
                      args + ")";
                break;
            }
            case OpKind::Function:
            case OpKind::Linear:
                rhs = "fn(" + py_str(st.function) + ", " +
                      (st.op == OpKind::Linear ? "True" : "False") + ")(" + var(in(0)) + ")";
                break;
            case OpKind::Softmax: {
                const auto have = L.of(il(0));
                const auto axis = have.find(L.of(st.index));
                rhs = std::string(torch ? "torch.softmax(" : "jax.nn.softmax(") + var(in(0)) +
                      (torch ? ", dim=" : ", axis=") + std::to_string(axis) + ")";
                break;
            }
            case OpKind::Reduce: {
                const auto have = L.of(il(0));
                std::string axes, kept;
                for (std::size_t k = 0; k < have.size(); ++k) {
                    if (os.find(have[k]) == std::string::npos)
                        axes += std::to_string(k) + ",";
                    else
                        kept += have[k];
                }
                rhs = "reduce(" +
                      py_str(std::string(semantics::reduce_fn_name(
                          st.reduce.value_or(semantics::ReduceFn::Sum)))) +
                      ", " + var(in(0)) + ", (" + axes + "))";
                if (kept != os)
                    rhs = "regroup(" + rhs + ", " + py_str(kept) + ", " + py_str(os) + ", " +
                          python_shape(ol) + ")";
                break;
            }
            case OpKind::Add: {
                for (std::size_t k = 0; k < st.inputs.size(); ++k) {
                    const bool neg = k < st.negated.size() && st.negated[k];
                    rhs += std::string(k == 0 ? (neg ? "-" : "") : (neg ? " - " : " + ")) +
                           "bcast(" + var(in(k)) + ", " + py_str(L.of(il(k))) + ", " + py_str(os) +
                           ")";
                }
                break;
            }
            case OpKind::Divide:
                rhs = "bcast(" + var(in(0)) + ", " + py_str(L.of(il(0))) + ", " + py_str(os) +
                      ") / bcast(" + var(in(1)) + ", " + py_str(L.of(il(1))) + ", " + py_str(os) +
                      ")";
                break;
            case OpKind::KeepOne:
                rhs = var(in(0)) + "  # R -> P: the same logical value";
                break;
            case OpKind::None:
                break;
            }
        }
        line(var(o) + " = " + rhs);
        line(var(o) + " = layout(" + var(o) + ", " + std::to_string(o) + ")");
    }
    // The stored result, in the left-hand side's index order.
    const auto rv = sp.result_value;
    const auto& rl = sp.values.at(static_cast<std::size_t>(rv)).layout;
    line("out = regroup(" + var(rv) + ", " + py_str(L.of(rl)) + ", " + py_str(L.of(sp.result)) +
         ", " + python_shape(sp.result) + ")");
    return out;
}

} // namespace detail
} // namespace shardscope::codegen
