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

    def store(line, key, out, accumulate, spec, reported=True):
        """A statement's store; reported=False: a factor a chain of products moves (stored
        in the chain's layout, not reported: exec reports each statement's target)."""
        if accumulate:
            out = out + load(key, out.shape, spec)
        state[key] = out
        if reported:
            report(args, line, key, out)
