// The plan as a JAX script: a Mesh, one NamedSharding per tensor (PartitionSpec from the
// plan's placements), one jax.jit per statement with in/out shardings, and a sharding
// constraint on every value the plan lays out (where the plan has a collective, the
// constraint changes and XLA inserts it). Partial values have no PartitionSpec: XLA keeps
// their pending sums itself.
#include "export.hpp"
#include "python.hpp"

#include "codegen/preludes.hpp"

namespace shardscope::codegen {

using namespace detail;

namespace {

/// PartitionSpec entries of a layout: per atom, None, "axis" or ("a", "b"). `partial`: what
/// a partial value gets (None: no constraint at all).
std::string spec_of(const semantics::Plan& plan, const semantics::TensorLayout& t,
                    bool none_if_partial, bool& uneven) {
    if (none_if_partial)
        for (const auto& p : t.placements)
            if (p.kind == semantics::Placement::Kind::Partial) return "None";
    std::string out = "(";
    for (const auto& a : t.atoms) {
        std::int64_t n = 1;
        for (int k : a.axes)
            n *= plan.mesh.axes[static_cast<std::size_t>(k)].size;
        if (a.axes.empty() || a.extent % n != 0) {
            if (!a.axes.empty()) uneven = true;
            out += "None, ";
            continue;
        }
        if (a.axes.size() == 1) {
            out += py_str(plan.mesh.axes[static_cast<std::size_t>(a.axes[0])].name) + ", ";
        } else {
            out += "(";
            for (int k : a.axes)
                out += py_str(plan.mesh.axes[static_cast<std::size_t>(k)].name) + ", ";
            out += "), ";
        }
    }
    return out + ")";
}

} // namespace

std::string export_jax(const ast::Program& program, const semantics::Plan& plan,
                       const ExportOptions& options) {
    const auto statements = pair_statements(program, plan);
    const auto n = plan.mesh.device_count();
    std::string out = python_header(
        plan, options, "JAX: the shardscope plan with a Mesh, NamedShardings and jax.jit",
        "XLA_FLAGS=--xla_force_host_platform_device_count=" + std::to_string(n) +
            " python3 THIS.py [--data random|arange|ints] [--seed N] [--dtype f32|f64] "
            "[--values]");
    out += "import argparse\nimport sys\n\nimport numpy as np\n\nimport jax\nimport "
           "jax.numpy as jnp\nimport jax.scipy.special\nfrom jax.sharding import Mesh, "
           "NamedSharding, PartitionSpec as P\n";
    std::string shape = "(", names = "(", order = "[";
    for (const auto& a : plan.mesh.axes) {
        shape += std::to_string(a.size) + ", ";
        names += py_str(a.name) + ", ";
    }
    for (std::int64_t d = 0; d < n; ++d)
        order +=
            (d ? ", " : "") + std::to_string(plan.mesh.devices.empty()
                                                 ? d
                                                 : plan.mesh.devices[static_cast<std::size_t>(d)]);
    out += "\nMESH_SHAPE = " + shape + ")\nMESH_AXES = " + names + ")\n";
    out += "DEVICE_ORDER = " + order + "]  # the device at each mesh coordinate, row-major\n";
    out += python_inputs();
    out += "\n\n" + std::string(preludes::jax_functions);
    out += "\n\n" + std::string(preludes::jax_main);
    bool uneven = false;
    std::vector<std::string> code;
    for (std::size_t s = 0; s < statements.size(); ++s) {
        std::string text;
        const auto& sp = *statements[s].plan;
        const std::string name = "s" + std::to_string(s) + "_line" + std::to_string(sp.range.line);
        text += "\n    # ---- line " + std::to_string(sp.range.line) + ": " +
                statement_comment(*statements[s].statement) + "\n";
        std::string cols;
        for (const auto& c : semantics::collectives_of(plan.mesh, sp))
            cols += (cols.empty() ? "" : ", ") + c;
        text += "    # plan: " + (cols.empty() ? std::string("no collectives") : cols) + "\n";
        text += "    specs = {\n";
        for (std::size_t v = 0; v < sp.values.size(); ++v)
            text += "        " + std::to_string(v) + ": " +
                    spec_of(plan, sp.values[v].layout, true, uneven) + ",\n";
        text += "    }\n";
        std::vector<int> loads;
        std::string params;
        for (std::size_t v = 0; v < sp.values.size(); ++v)
            if (!sp.values[v].load.empty()) {
                loads.push_back(static_cast<int>(v));
                params += (params.empty() ? "" : ", ") + std::string("v") + std::to_string(v);
            }
        text += "\n    def " + name + "(" + params + "):\n";
        text += "        layout = lambda x, i: constrain(x, specs[i])\n";
        for (std::size_t v = 0; v < sp.values.size(); ++v)
            if (!sp.values[v].constant.empty())
                text += "        v" + std::to_string(v) + " = jnp.asarray(" +
                        sp.values[v].constant + ", dtype=dtype)\n";
        text += python_steps(plan, sp, Backend::Jax, "        ");
        // A chain of products returns every factor it moves too, each laid out as the plan
        // stores it (its value's layout).
        const auto moved = moved_factors(sp);
        std::string returns = "out", moved_specs;
        for (int v : moved) {
            returns += ", v" + std::to_string(v);
            moved_specs +=
                "named(" +
                spec_of(plan, sp.values[static_cast<std::size_t>(v)].layout, false, uneven) + "), ";
        }
        text += "        return " + returns + "\n\n";
        std::string in_specs, args;
        for (int v : loads) {
            const auto& info = sp.values[static_cast<std::size_t>(v)];
            const auto spec = spec_of(plan, info.layout, false, uneven);
            in_specs += "named(" + spec + "), ";
            args += (args.empty() ? "" : ", ") + std::string("load(") +
                    load_key(plan, s, info.load) + ", " + python_shape(info.layout) + ", " + spec +
                    ")";
        }
        const auto out_spec = spec_of(plan, sp.result, false, uneven);
        const auto line = std::to_string(sp.range.line);
        const std::string accumulate =
            sp.assign == semantics::Assign::Accumulate ? "True" : "False";
        if (moved.empty()) {
            text += "    step = jax.jit(" + name + ", in_shardings=(" + in_specs +
                    "), out_shardings=named(" + out_spec + "))\n";
            text += "    store(" + line + ", " + py_str(sp.target) + ", step(" + args + "), " +
                    accumulate + ", " + out_spec + ")\n";
        } else {
            text += "    step = jax.jit(" + name + ", in_shardings=(" + in_specs +
                    "), out_shardings=(named(" + out_spec + "), " + moved_specs + "))\n";
            text += "    outs = step(" + args + ")\n";
            text += moved_factors_comment(sp);
            for (std::size_t k = 0; k < moved.size(); ++k) {
                const auto& layout = sp.values[static_cast<std::size_t>(moved[k])].layout;
                text += "    store(" + line + ", " + py_str(layout.tensor) + ", outs[" +
                        std::to_string(k + 1) + "], False, " +
                        spec_of(plan, layout, false, uneven) + ", reported=False)\n";
            }
            text += "    store(" + line + ", " + py_str(sp.target) + ", outs[0], " + accumulate +
                    ", " + out_spec + ")\n";
        }
        code.push_back(std::move(text));
    }
    out += python_program(plan, code);
    if (uneven)
        out += "\n    # Some index does not divide by its mesh axes: NamedSharding needs even\n"
               "    # shards, so those dimensions are left unsharded here.\n";
    out += "\n\nif __name__ == \"__main__\":\n    main()\n";
    return out;
}

} // namespace shardscope::codegen
