// The plan as a PyTorch DTensor script for torchrun: a DeviceMesh, every input distributed
// with the plan's placements, torch.einsum and the other ops on DTensors, and after every
// step a redistribute to the layout the plan gives the value, so DTensor runs the plan's
// collectives (a redistribute to the layout a value already has moves nothing).
#include "export.hpp"
#include "python.hpp"

#include "codegen/preludes.hpp"

namespace shardscope::codegen {

using namespace detail;

namespace {

/// The DTensor placements of a layout, one per mesh axis: Shard(atom), Partial(), Replicate().
/// DTensor shards one dimension over several mesh axes in mesh order; `unordered` is set when
/// the plan's order (major to minor) differs.
std::string placements_of(const semantics::TensorLayout& t, std::size_t axes, bool& unordered) {
    std::string out = "[";
    for (std::size_t k = 0; k < axes; ++k) {
        std::string p = "Replicate()";
        for (std::size_t a = 0; a < t.atoms.size(); ++a) {
            const auto& ax = t.atoms[a].axes;
            for (std::size_t j = 0; j < ax.size(); ++j)
                if (ax[j] == static_cast<int>(k)) {
                    p = "Shard(" + std::to_string(a) + ")";
                    if (j > 0 && ax[j - 1] > ax[j]) unordered = true;
                }
        }
        if (k < t.placements.size() && t.placements[k].kind == semantics::Placement::Kind::Partial)
            p = t.placements[k].reduce == semantics::PartialOp::Max ? "Partial(\"max\")"
                                                                    : "Partial()";
        out += (k ? ", " : "") + p;
    }
    return out + "]";
}

} // namespace

std::string export_torch(const ast::Program& program, const semantics::Plan& plan,
                         const ExportOptions& options) {
    const auto statements = pair_statements(program, plan);
    const auto n = plan.mesh.device_count();
    const auto axes = plan.mesh.axes.size();
    std::string out = python_header(
        plan, options,
        "PyTorch DTensor: the shardscope plan on a DeviceMesh (torch.distributed.tensor)",
        "torchrun --nproc-per-node " + std::to_string(n) +
            " THIS.py [--data random|arange|ints] [--seed N] [--dtype f32|f64] [--values] "
            "[--device auto|cpu|cuda]");
    out += "import argparse\nimport gc\nimport os\nimport sys\n\nimport numpy as np\nimport "
           "torch\nimport "
           "torch.distributed as dist\nfrom torch.distributed.device_mesh import DeviceMesh\n"
           "try:\n    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, "
           "distribute_tensor\nexcept ImportError:  # torch < 2.4\n    from "
           "torch.distributed._tensor import DTensor, Replicate, Shard, distribute_tensor\n"
           "    from torch.distributed._tensor.placement_types import Partial\n";
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
    out += "DEVICE_ORDER = " + order + "]  # the rank at each mesh coordinate, row-major\n";
    out += python_inputs();
    out += "\n\n" + std::string(preludes::torch_functions);
    out += "\n\n" + std::string(preludes::torch_main);
    bool unordered = false;
    std::vector<std::string> code;
    for (std::size_t s = 0; s < statements.size(); ++s) {
        std::string text;
        const auto& sp = *statements[s].plan;
        text += "\n    # ---- line " + std::to_string(sp.range.line) + ": " +
                statement_comment(*statements[s].statement) + "\n";
        std::string cols;
        for (const auto& c : semantics::collectives_of(plan.mesh, sp))
            cols += (cols.empty() ? "" : ", ") + c;
        text += "    # plan: " + (cols.empty() ? std::string("no collectives") : cols) + "\n";
        text += "    places = {\n";
        for (std::size_t v = 0; v < sp.values.size(); ++v)
            text += "        " + std::to_string(v) + ": " +
                    placements_of(sp.values[v].layout, axes, unordered) + ",\n";
        text += "    }\n";
        text += "    layout = lambda x, i: relayout(x, places[i])\n";
        for (std::size_t v = 0; v < sp.values.size(); ++v) {
            const auto& info = sp.values[v];
            if (!info.load.empty())
                text += "    v" + std::to_string(v) + " = load(" + load_key(plan, s, info.load) +
                        ", " + python_shape(info.layout) + ", places[" + std::to_string(v) + "])\n";
            else if (!info.constant.empty())
                text += "    v" + std::to_string(v) + " = const(" + info.constant + ")\n";
        }
        text += python_steps(plan, sp, Backend::Torch, "    ");
        // A chain of products stores every factor it moves, each in its value's layout.
        text += moved_factors_comment(sp);
        for (int v : moved_factors(sp)) {
            const auto& layout = sp.values[static_cast<std::size_t>(v)].layout;
            text += "    store(" + std::to_string(sp.range.line) + ", " + py_str(layout.tensor) +
                    ", v" + std::to_string(v) + ", False, " +
                    placements_of(layout, axes, unordered) + ", reported=False)\n";
        }
        text += "    store(" + std::to_string(sp.range.line) + ", " + py_str(sp.target) +
                ", out, " + (sp.assign == semantics::Assign::Accumulate ? "True" : "False") + ", " +
                placements_of(sp.result, axes, unordered) + ")\n";
        code.push_back(std::move(text));
    }
    out += python_program(plan, code);
    if (unordered)
        out += "\n    # Some index is sharded over several mesh axes in another order than the\n"
               "    # mesh's: DTensor shards in mesh order, so its chunks sit on other ranks\n"
               "    # than in the plan (the values are the same).\n";
    out +=
        "\n    # Every rank done, and the DTensors freed while the process group lives (some sit "
        "in\n"
        "    # reference cycles: freed at the interpreter's exit instead, gloo sometimes aborts).\n"
        "    dist.barrier()\n    state.clear()\n    gc.collect()\n"
        "    dist.destroy_process_group()\n";
    out += "\n\nif __name__ == \"__main__\":\n    main()\n";
    return out;
}

} // namespace shardscope::codegen
