// The plan as a JAX script: a Mesh, one NamedSharding per tensor (PartitionSpec from the
// plan's placements), one jax.jit per statement with in/out shardings, and a sharding
// constraint on every value the plan lays out (where the plan has a collective, the
// constraint changes and XLA inserts it). Partial values have no PartitionSpec: XLA keeps
// their pending sums itself.
#include "export.hpp"
#include "export_python.hpp"

namespace shardscope::render {

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

const char* kFunctions = R"PY(

def _erf(x):
    return jax.scipy.special.erf(x)


def _gelu(x):
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


def _sigmoid(x):
    return 1.0 / (1.0 + jnp.exp(-x))


# shardscope's functions (exec/functions.hpp): phi is GELU (erf form), log and sqrt act on |x|,
# scale halves, and the backward's ones, dmax and dF (the derivative of F).
FUNCTIONS = {
    "phi": _gelu,
    "gelu": _gelu,
    "relu": lambda x: jnp.maximum(x, 0.0),
    "silu": lambda x: x * _sigmoid(x),
    "sigmoid": _sigmoid,
    "tanh": jnp.tanh,
    "exp": jnp.exp,
    "log": lambda x: jnp.log(jnp.abs(x)),
    "sqrt": lambda x: jnp.sqrt(jnp.abs(x)),
    "neg": lambda x: -x,
    "scale": lambda x: 0.5 * x,
    "ones": jnp.ones_like,
    "dmax": lambda x: jnp.where(x == 0, 1.0, 0.0).astype(x.dtype),
    "drelu": lambda x: jnp.where(x > 0, 1.0, 0.0).astype(x.dtype),
    "dphi": lambda x: 0.5 * (1.0 + _erf(x / np.sqrt(2.0))) + x * jnp.exp(-0.5 * x * x) * 0.3989422804014327,
    "dgelu": lambda x: 0.5 * (1.0 + _erf(x / np.sqrt(2.0))) + x * jnp.exp(-0.5 * x * x) * 0.3989422804014327,
    "dsilu": lambda x: _sigmoid(x) * (1.0 + x * (1.0 - _sigmoid(x))),
    "dsigmoid": lambda x: _sigmoid(x) * (1.0 - _sigmoid(x)),
    "dtanh": lambda x: 1.0 - jnp.tanh(x) * jnp.tanh(x),
    "dexp": jnp.exp,
    "dlog": lambda x: 1.0 / x,
    "dsqrt": lambda x: jnp.where(x < 0, -0.5, 0.5) / jnp.sqrt(jnp.abs(x)),
}


def fn(name, linear):
    if name in FUNCTIONS:
        return FUNCTIONS[name]
    if linear:
        return FUNCTIONS["scale"]  # a declared linear function's stand-in
    if name.startswith("d"):
        return FUNCTIONS["dtanh"]  # the derivative of a declared function's stand-in
    return jnp.tanh  # a declared elementwise function's stand-in


def reduce(kind, x, axes):
    if not axes:
        return x
    if kind == "max":
        return jnp.max(x, axis=axes)
    if kind == "mean":
        return jnp.mean(x, axis=axes)
    return jnp.sum(x, axis=axes)


def regroup(x, have, want, shape):
    """The same values under another index order or grouping (row-major)."""
    if have != want and sorted(have) == sorted(want):
        return jnp.einsum(have + "->" + want, x)
    return x.reshape(shape)


def bcast(x, have, want):
    """x (indices `have`) broadcast to the indices `want`."""
    order = "".join(c for c in want if c in have)
    if have and order != have:
        x = jnp.einsum(have + "->" + order, x)
    return x.reshape(tuple(x.shape[order.index(c)] if c in have else 1 for c in want))
)PY";

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
    out += kFunctions;
    out += R"PY(

def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", choices=["random", "arange", "ints"], default="random")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=["f32", "f64"], default="f32")
    ap.add_argument("--values", action="store_true", help="print every element of each result")
    args = ap.parse_args()
    if args.dtype == "f64":
        jax.config.update("jax_enable_x64", True)
    dtype = jnp.float64 if args.dtype == "f64" else jnp.float32
    devices = jax.devices()
    if len(devices) < len(DEVICE_ORDER):
        sys.exit(f"this plan needs {len(DEVICE_ORDER)} devices and JAX sees {len(devices)}: run "
                 f"with XLA_FLAGS=--xla_force_host_platform_device_count={len(DEVICE_ORDER)}")
    mesh = Mesh(np.array(devices)[DEVICE_ORDER].reshape(MESH_SHAPE), MESH_AXES)
    state = {}

    def named(spec):
        return NamedSharding(mesh, P(*spec))

    def constrain(x, spec):
        return x if spec is None else jax.lax.with_sharding_constraint(x, named(spec))

    def load(key, shape, spec):
        if key in state:  # an earlier result, in this use's index names (row-major)
            x = state[key].reshape(shape)
        else:  # a program input
            x = jnp.asarray(input_values(key, prod(shape), args.data, args.seed).reshape(shape),
                            dtype=dtype)
        return jax.device_put(x, named(spec))

    def store(line, key, out, accumulate, spec):
        if accumulate:
            out = out + load(key, out.shape, spec)
        state[key] = out
        report(args, line, key, out)
)PY";
    bool uneven = false;
    for (std::size_t s = 0; s < statements.size(); ++s) {
        const auto& sp = *statements[s].plan;
        const std::string name = "s" + std::to_string(s) + "_line" + std::to_string(sp.range.line);
        out += "\n    # ---- line " + std::to_string(sp.range.line) + ": " +
               statement_comment(*statements[s].statement) + "\n";
        std::string cols;
        for (const auto& c : sp.collectives)
            cols += (cols.empty() ? "" : ", ") + c;
        out += "    # plan: " + (cols.empty() ? std::string("no collectives") : cols) + "\n";
        out += "    specs = {\n";
        for (std::size_t v = 0; v < sp.values.size(); ++v)
            out += "        " + std::to_string(v) + ": " +
                   spec_of(plan, sp.values[v].layout, true, uneven) + ",\n";
        out += "    }\n";
        std::vector<int> loads;
        std::string params;
        for (std::size_t v = 0; v < sp.values.size(); ++v)
            if (!sp.values[v].load.empty()) {
                loads.push_back(static_cast<int>(v));
                params += (params.empty() ? "" : ", ") + std::string("v") + std::to_string(v);
            }
        out += "\n    def " + name + "(" + params + "):\n";
        out += "        layout = lambda x, i: constrain(x, specs[i])\n";
        for (std::size_t v = 0; v < sp.values.size(); ++v)
            if (!sp.values[v].constant.empty())
                out += "        v" + std::to_string(v) + " = jnp.asarray(" + sp.values[v].constant +
                       ", dtype=dtype)\n";
        out += python_steps(plan, sp, Backend::Jax, "        ");
        out += "        return out\n\n";
        std::string in_specs, args;
        for (int v : loads) {
            const auto& info = sp.values[static_cast<std::size_t>(v)];
            const auto spec = spec_of(plan, info.layout, false, uneven);
            in_specs += "named(" + spec + "), ";
            args += (args.empty() ? "" : ", ") + std::string("load(") + py_str(info.load) + ", " +
                    python_shape(info.layout) + ", " + spec + ")";
        }
        const auto out_spec = spec_of(plan, sp.result, false, uneven);
        out += "    step = jax.jit(" + name + ", in_shardings=(" + in_specs +
               "), out_shardings=named(" + out_spec + "))\n";
        out += "    store(" + std::to_string(sp.range.line) + ", " + py_str(sp.target) + ", step(" +
               args + "), " + (sp.assign == semantics::Assign::Accumulate ? "True" : "False") +
               ", " + out_spec + ")\n";
    }
    if (uneven)
        out += "\n    # Some index does not divide by its mesh axes: NamedSharding needs even\n"
               "    # shards, so those dimensions are left unsharded here.\n";
    out += "\n\nif __name__ == \"__main__\":\n    main()\n";
    return out;
}

} // namespace shardscope::render
