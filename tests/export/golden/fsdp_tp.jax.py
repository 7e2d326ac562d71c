#!/usr/bin/env python3
# JAX: the shardscope plan with a Mesh, NamedShardings and jax.jit
# Source: samples/fsdp_tp.ein
# Made by: shardscope export --to jax samples/fsdp_tp.ein
# Mesh: 0=2 x 1=4 (8 devices)
# Run: XLA_FLAGS=--xla_force_host_platform_device_count=8 python3 THIS.py [--data random|arange|ints] [--seed N] [--dtype f32|f64] [--values]
# Inputs are shardscope exec's: --data random|arange|ints and --seed N give the same
# numbers, so --values prints what 'shardscope exec' computes.
import argparse
import sys

import numpy as np

import jax
import jax.numpy as jnp
import jax.scipy.special
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

MESH_SHAPE = (2, 4, )
MESH_AXES = ("0", "1", )
DEVICE_ORDER = [0, 1, 2, 3, 4, 5, 6, 7]  # the device at each mesh coordinate, row-major

MASK = (1 << 64) - 1


def _fnv1a(key):
    h = 1469598103934665603
    for c in key.encode("utf-8"):
        h = ((h ^ c) * 1099511628211) & MASK
    return h


def input_values(key, count, mode, seed):
    """The logical value of input `key` as shardscope exec generates it (exec/data.cpp)."""
    if mode == "arange":
        return np.arange(1, count + 1, dtype=np.float64)
    state = np.uint64((seed ^ _fnv1a(key)) & MASK)
    with np.errstate(over="ignore"):
        z = state + np.arange(1, count + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    if mode == "ints":
        return (z % np.uint64(9)).astype(np.int64).astype(np.float64) - 4.0
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53 * 2.0 - 1.0


def prod(shape):
    n = 1
    for e in shape:
        n *= e
    return n


def report(args, line, key, value):
    """One line per statement; with --values, every element (row-major)."""
    flat = np.asarray(value, dtype=np.float64).reshape(-1)
    print(f"line {line} {key}: shape {tuple(np.shape(value))} sum {flat.sum():.10g} "
          f"max|x| {np.abs(flat).max() if flat.size else 0:.10g}")
    if args.values:
        print(f"VALUES {line} {key} {flat.size} " + " ".join(repr(float(v)) for v in flat))


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


def ring_step(x, axis, shift, pairs):
    """Permute_{i_k}: x moved forward by `shift` along `axis`, cyclically; the sharding
    constraint that follows makes XLA send each block to the next device (`pairs`)."""
    return jnp.roll(x, shift, axis)


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

    # ---- line 20: z_{bsd} -> z_{(f c) s (t e)} -> z_{f_0 c s t_1 e}
    # plan: no collectives
    specs = {
        0: (None, None, None, ),
        1: (None, None, None, None, None, ),
        2: (None, None, None, None, None, ),
        3: ("0", None, None, None, None, ),
        4: ("0", None, None, "1", None, ),
    }

    def s0_line20(v0):
        layout = lambda x, i: constrain(x, specs[i])
        # split (reshape z (split or merge indices, free))
        v1 = regroup(v0, "abc", "debfg", (2,8,2048,4,4096))
        v1 = layout(v1, 1)
        # split (reshape z (split or merge indices, free))
        v2 = regroup(v1, "debfg", "debfg", (2,8,2048,4,4096))
        v2 = layout(v2, 2)
        # slice (slice z locally along f over axis 0: the chain asks for it)
        v3 = regroup(v2, "debfg", "debfg", (2,8,2048,4,4096))
        v3 = layout(v3, 3)
        # slice (slice z locally along t over axis 1: the chain asks for it)
        v4 = regroup(v3, "debfg", "debfg", (2,8,2048,4,4096))
        v4 = layout(v4, 4)
        out = regroup(v4, "debfg", "debfg", (2,8,2048,4,4096))
        return out

    step = jax.jit(s0_line20, in_shardings=(named((None, None, None, )), ), out_shardings=named(("0", None, None, "1", None, )))
    store(20, "z", step(load("z", (16,2048,16384), (None, None, None, ))), False, ("0", None, None, "1", None, ))

    # ---- line 26: W^0_{t_1 e (g_0 n)} -> W^0_{t_1 e m}
    # plan: all-gather(0)
    specs = {
        0: ("1", None, "0", None, ),
        1: ("1", None, "0", ),
        2: ("1", None, None, ),
    }

    def s1_line26(v0):
        layout = lambda x, i: constrain(x, specs[i])
        # split (reshape W^0 (split or merge indices, free))
        v1 = regroup(v0, "abcd", "abe", (4,4096,4096))
        v1 = layout(v1, 1)
        # all-gather(0) (all-gather W^0 over axis 0 (unshard m): the chain asks for it)
        v2 = regroup(v1, "abe", "abe", (4,4096,4096))
        v2 = layout(v2, 2)
        out = regroup(v2, "abe", "abe", (4,4096,4096))
        return out

    step = jax.jit(s1_line26, in_shardings=(named(("1", None, "0", None, )), ), out_shardings=named(("1", None, None, )))
    store(26, "W^0", step(load("W^0", (4,4096,2,2048), ("1", None, "0", None, ))), False, ("1", None, None, ))

    # ---- line 32: h_{f_0 c s t_1 e} = W^0_{t_1 e m} x_{f_0 c s m}
    # plan: no collectives
    specs = {
        0: ("1", None, None, ),
        1: ("0", None, None, None, ),
        2: ("1", None, "0", None, None, ),
    }

    def s2_line32(v0, v1):
        layout = lambda x, i: constrain(x, specs[i])
        # compute: t_1 e m, f_0 c s m -> t e f c s
        v2 = jnp.einsum("abc,defc->abdef", v0, v1)
        v2 = layout(v2, 2)
        out = regroup(v2, "abdef", "defab", (2,8,2048,4,4096))
        return out

    step = jax.jit(s2_line32, in_shardings=(named(("1", None, None, )), named(("0", None, None, None, )), ), out_shardings=named(("0", None, None, "1", None, )))
    store(32, "h", step(load("W^0", (4,4096,4096), ("1", None, None, )), load("x", (2,8,2048,4096), ("0", None, None, None, ))), False, ("0", None, None, "1", None, ))

    # ---- line 37: y_{f_0 c s m} = W^1_{m t_1 e} h_{f_0 c s t_1 e}
    # plan: all-reduce(1)
    specs = {
        0: (None, "1", None, ),
        1: ("0", None, None, "1", None, ),
        2: None,
        3: (None, "0", None, None, ),
    }

    def s3_line37(v0, v1):
        layout = lambda x, i: constrain(x, specs[i])
        # compute: m t_1 e, f_0 c s t_1 e -> m f c s
        v2 = jnp.einsum("abc,defbc->adef", v0, v1)
        v2 = layout(v2, 2)
        # all-reduce(1) (all-reduce %1 over axis 1 (sum): the left-hand side asks for it)
        v3 = regroup(v2, "adef", "adef", (4096,2,8,2048))
        v3 = layout(v3, 3)
        out = regroup(v3, "adef", "defa", (2,8,2048,4096))
        return out

    step = jax.jit(s3_line37, in_shardings=(named((None, "1", None, )), named(("0", None, None, "1", None, )), ), out_shardings=named(("0", None, None, None, )))
    store(37, "y", step(load("W^1", (4096,4,4096), (None, "1", None, )), load("h", (2,8,2048,4,4096), ("0", None, None, "1", None, ))), False, ("0", None, None, None, ))


if __name__ == "__main__":
    main()
