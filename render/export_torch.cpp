// The plan as a PyTorch DTensor script for torchrun: a DeviceMesh, every input distributed
// with the plan's placements, torch.einsum and the other ops on DTensors, and after every
// step a redistribute to the layout the plan gives the value, so DTensor runs the plan's
// collectives (a redistribute to the layout a value already has moves nothing).
#include "export.hpp"
#include "export_python.hpp"

namespace shardscope::render {

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
            p = t.placements[k].reduce == "max" ? "Partial(\"max\")" : "Partial()";
        out += (k ? ", " : "") + p;
    }
    return out + "]";
}

const char* kFunctions = R"PY(

def _gelu(x):
    return torch.nn.functional.gelu(x)  # the erf form, as shardscope's phi


# shardscope's functions (exec/functions.hpp): phi is GELU (erf form), log and sqrt act on |x|,
# scale halves, and the backward's ones, dmax and dF (the derivative of F).
FUNCTIONS = {
    "phi": _gelu,
    "gelu": _gelu,
    "relu": torch.relu,
    "silu": lambda x: x * torch.sigmoid(x),
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "exp": torch.exp,
    "log": lambda x: torch.log(torch.abs(x)),
    "sqrt": lambda x: torch.sqrt(torch.abs(x)),
    "neg": lambda x: -x,
    "scale": lambda x: 0.5 * x,
    "ones": torch.ones_like,
    "dmax": lambda x: (x == 0).to(x.dtype),
    "drelu": lambda x: (x > 0).to(x.dtype),
    "dphi": lambda x: 0.5 * (1.0 + torch.erf(x * 0.7071067811865476)) + x * torch.exp(-0.5 * x * x) * 0.3989422804014327,
    "dgelu": lambda x: 0.5 * (1.0 + torch.erf(x * 0.7071067811865476)) + x * torch.exp(-0.5 * x * x) * 0.3989422804014327,
    "dsilu": lambda x: torch.sigmoid(x) * (1.0 + x * (1.0 - torch.sigmoid(x))),
    "dsigmoid": lambda x: torch.sigmoid(x) * (1.0 - torch.sigmoid(x)),
    "dtanh": lambda x: 1.0 - torch.tanh(x) * torch.tanh(x),
    "dexp": torch.exp,
    "dlog": lambda x: 1.0 / x,
    "dsqrt": lambda x: (0.5 - (x < 0).to(x.dtype)) / torch.sqrt(torch.abs(x)),
}


def fn(name, linear):
    if name in FUNCTIONS:
        return FUNCTIONS[name]
    if linear:
        return FUNCTIONS["scale"]  # a declared linear function's stand-in
    if name.startswith("d"):
        return FUNCTIONS["dtanh"]  # the derivative of a declared function's stand-in
    return torch.tanh  # a declared elementwise function's stand-in


def reduce(kind, x, axes):
    if not axes:
        return x  # (torch reads dim=() as every dimension)
    if kind == "max":
        return torch.amax(x, dim=axes)
    if kind == "mean":
        return torch.mean(x, dim=axes)
    return torch.sum(x, dim=axes)


def regroup(x, have, want, shape):
    """The same values under another index order or grouping (row-major)."""
    if have != want and sorted(have) == sorted(want):
        return torch.einsum(have + "->" + want, x)
    return x.reshape(shape)


def bcast(x, have, want):
    """x (indices `have`) broadcast to the indices `want`."""
    order = "".join(c for c in want if c in have)
    if have and order != have:
        x = torch.einsum(have + "->" + order, x)
    return x.reshape(tuple(x.shape[order.index(c)] if c in have else 1 for c in want))
)PY";

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
    out += kFunctions;
    out += R"PY(

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", choices=["random", "arange", "ints"], default="random")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=["f32", "f64"], default="f32")
    ap.add_argument("--values", action="store_true", help="print every element of each result")
    ap.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                    help="cuda (nccl) needs a GPU per rank on this machine; auto takes cuda "
                         "only then, else cpu (gloo)")
    args = ap.parse_args()
    run = f"torchrun --nproc-per-node {len(DEVICE_ORDER)} {sys.argv[0]}"
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        sys.exit(f"run this under torchrun, one process per rank: {run}")
    if int(os.environ["WORLD_SIZE"]) != len(DEVICE_ORDER):
        sys.exit(f"this plan needs {len(DEVICE_ORDER)} ranks, not {os.environ['WORLD_SIZE']}: {run}")
    local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if args.device == "cuda" and gpus < local_ranks:
        sys.exit(f"--device cuda needs a GPU per rank: {local_ranks} ranks on this machine, "
                 f"{gpus} GPU(s); use --device cpu (gloo)")
    cuda = args.device == "cuda" or (args.device == "auto" and 0 < local_ranks <= gpus)
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend="nccl" if cuda else "gloo")
    device = "cuda" if cuda else "cpu"
    mesh = DeviceMesh(device, torch.tensor(DEVICE_ORDER).reshape(MESH_SHAPE),
                      mesh_dim_names=MESH_AXES)
    dtype = torch.float64 if args.dtype == "f64" else torch.float32
    rank0 = dist.get_rank() == 0
    state = {}

    def relayout(x, places):
        """x.redistribute(mesh, places), but R -> P, which redistribute refuses, as exec does
        it: on each such mesh axis the copy at coordinate 0 keeps the value, the others hold
        zeros (for a max, every copy keeps it)."""
        keep = [k for k, (have, want) in enumerate(zip(x.placements, places))
                if isinstance(want, Partial) and isinstance(have, Replicate)]
        if not keep:
            return x.redistribute(mesh, places)
        x = x.redistribute(mesh, [Replicate() if k in keep else p for k, p in enumerate(places)])
        local = x.to_local()
        coordinate = mesh.get_coordinate()
        if any(coordinate[k] != 0 and getattr(places[k], "reduce_op", "sum") != "max"
               for k in keep):
            local = torch.zeros_like(local)
        return DTensor.from_local(local, mesh, places, run_check=False, shape=x.shape,
                                  stride=x.stride())

    def distribute(full, places):
        # distribute_tensor takes no Partial: replicate, then R -> P (keep one copy).
        start = [Replicate() if isinstance(p, Partial) else p for p in places]
        return relayout(distribute_tensor(full, mesh, start), places)

    def load(key, shape, places):
        if key in state:  # an earlier result, in this use's index names (row-major)
            return distribute(state[key].full_tensor().reshape(shape), places)
        values = input_values(key, prod(shape), args.data, args.seed).reshape(shape)
        return distribute(torch.tensor(values, dtype=dtype, device=device), places)

    def const(value):
        return distribute(torch.tensor(value, dtype=dtype, device=device), [Replicate()] * len(MESH_SHAPE))

    def store(line, key, out, accumulate, places):
        out = relayout(out, places)
        if accumulate:
            out = out + load(key, tuple(out.shape), places)
        state[key] = out
        full = out.full_tensor()  # a collective: every rank takes part
        if rank0:
            report(args, line, key, full.cpu().numpy())
)PY";
    bool unordered = false;
    for (std::size_t s = 0; s < statements.size(); ++s) {
        const auto& sp = *statements[s].plan;
        out += "\n    # ---- line " + std::to_string(sp.range.line) + ": " +
               statement_comment(*statements[s].statement) + "\n";
        std::string cols;
        for (const auto& c : sp.collectives)
            cols += (cols.empty() ? "" : ", ") + c;
        out += "    # plan: " + (cols.empty() ? std::string("no collectives") : cols) + "\n";
        out += "    places = {\n";
        for (std::size_t v = 0; v < sp.values.size(); ++v)
            out += "        " + std::to_string(v) + ": " +
                   placements_of(sp.values[v].layout, axes, unordered) + ",\n";
        out += "    }\n";
        out += "    layout = lambda x, i: relayout(x, places[i])\n";
        for (std::size_t v = 0; v < sp.values.size(); ++v) {
            const auto& info = sp.values[v];
            if (!info.load.empty())
                out += "    v" + std::to_string(v) + " = load(" + py_str(info.load) + ", " +
                       python_shape(info.layout) + ", places[" + std::to_string(v) + "])\n";
            else if (!info.constant.empty())
                out += "    v" + std::to_string(v) + " = const(" + info.constant + ")\n";
        }
        out += python_steps(plan, sp, Backend::Torch, "    ");
        out += "    store(" + std::to_string(sp.range.line) + ", " + py_str(sp.target) + ", out, " +
               (sp.assign == semantics::Assign::Accumulate ? "True" : "False") + ", " +
               placements_of(sp.result, axes, unordered) + ")\n";
    }
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

} // namespace shardscope::render
