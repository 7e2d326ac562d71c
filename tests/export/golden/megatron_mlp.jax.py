#!/usr/bin/env python3
# JAX: the shardscope plan with a Mesh, NamedShardings and jax.jit
# Source: samples/megatron_mlp.ein
# Made by: shardscope export --to jax samples/megatron_mlp.ein
# Mesh: 0=4 (4 devices)
# Run: XLA_FLAGS=--xla_force_host_platform_device_count=4 python3 THIS.py [--data random|arange|ints] [--seed N] [--dtype f32|f64] [--values]
# Inputs are shardscope exec's: --data random|arange|ints and --seed N give the same
# numbers, so --values prints what 'shardscope exec' computes.
import argparse
import sys

import numpy as np

import jax
import jax.numpy as jnp
import jax.scipy.special
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

MESH_SHAPE = (4, )
MESH_AXES = ("0", )
DEVICE_ORDER = [0, 1, 2, 3]  # the device at each mesh coordinate, row-major

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

    # ---- line 18: z_{bsd} = W^1_{d r_0 f} phi(W^0_{r_0 f d'} x_{bsd'})
    # plan: all-reduce(0)
    specs = {
        0: (None, "0", None, ),
        1: ("0", None, None, ),
        2: (None, None, None, ),
        3: ("0", None, None, None, ),
        4: ("0", None, None, None, ),
        5: None,
        6: (None, None, None, ),
    }

    def s0_line18(v0, v1, v2):
        layout = lambda x, i: constrain(x, specs[i])
        # compute: r_0 f d', b s d' -> r f b s
        v3 = jnp.einsum("bcd,efd->bcef", v1, v2)
        v3 = layout(v3, 3)
        # compute: phi
        v4 = fn("phi", False)(v3)
        v4 = layout(v4, 4)
        # compute: d r_0 f, r f b s -> d b s
        v5 = jnp.einsum("abc,bcef->aef", v0, v4)
        v5 = layout(v5, 5)
        # all-reduce(0) (all-reduce %3 over axis 0 (sum): the left-hand side asks for it)
        v6 = regroup(v5, "aef", "aef", (4096,8,2048))
        v6 = layout(v6, 6)
        out = regroup(v6, "aef", "efa", (8,2048,4096))
        return out

    step = jax.jit(s0_line18, in_shardings=(named((None, "0", None, )), named(("0", None, None, )), named((None, None, None, )), ), out_shardings=named((None, None, None, )))
    store(18, "z", step(load("W^1", (4096,4,4096), (None, "0", None, )), load("W^0", (4,4096,4096), ("0", None, None, )), load("x", (8,2048,4096), (None, None, None, ))), False, (None, None, None, ))

    # ---- line 22: y_{b s r_0 f} = W^0_{r_0 f d'} x_{bsd'}
    # plan: no collectives
    specs = {
        0: ("0", None, None, ),
        1: (None, None, None, ),
        2: ("0", None, None, None, ),
    }

    def s1_line22(v0, v1):
        layout = lambda x, i: constrain(x, specs[i])
        # compute: r_0 f d', b s d' -> r f b s
        v2 = jnp.einsum("abc,dec->abde", v0, v1)
        v2 = layout(v2, 2)
        out = regroup(v2, "abde", "deab", (8,2048,4,4096))
        return out

    step = jax.jit(s1_line22, in_shardings=(named(("0", None, None, )), named((None, None, None, )), ), out_shardings=named((None, None, "0", None, )))
    store(22, "y", step(load("W^0", (4,4096,4096), ("0", None, None, )), load("x", (8,2048,4096), (None, None, None, ))), False, (None, None, "0", None, ))

    # ---- line 24: h_{b s r_0 f} = phi(y_{b s r_0 f})
    # plan: no collectives
    specs = {
        0: (None, None, "0", None, ),
        1: (None, None, "0", None, ),
    }

    def s2_line24(v0):
        layout = lambda x, i: constrain(x, specs[i])
        # compute: phi
        v1 = fn("phi", False)(v0)
        v1 = layout(v1, 1)
        out = regroup(v1, "abcd", "abcd", (8,2048,4,4096))
        return out

    step = jax.jit(s2_line24, in_shardings=(named((None, None, "0", None, )), ), out_shardings=named((None, None, "0", None, )))
    store(24, "h", step(load("y", (8,2048,4,4096), (None, None, "0", None, ))), False, (None, None, "0", None, ))

    # ---- line 26: o_{bsd} = W^1_{d r_0 f} h_{b s r_0 f}
    # plan: all-reduce(0)
    specs = {
        0: (None, "0", None, ),
        1: (None, None, "0", None, ),
        2: None,
        3: (None, None, None, ),
    }

    def s3_line26(v0, v1):
        layout = lambda x, i: constrain(x, specs[i])
        # compute: d r_0 f, b s r_0 f -> d b s
        v2 = jnp.einsum("abc,debc->ade", v0, v1)
        v2 = layout(v2, 2)
        # all-reduce(0) (all-reduce %1 over axis 0 (sum): the left-hand side asks for it)
        v3 = regroup(v2, "ade", "ade", (4096,8,2048))
        v3 = layout(v3, 3)
        out = regroup(v3, "ade", "dea", (8,2048,4096))
        return out

    step = jax.jit(s3_line26, in_shardings=(named((None, "0", None, )), named((None, None, "0", None, )), ), out_shardings=named((None, None, None, )))
    store(26, "o", step(load("W^1", (4096,4,4096), (None, "0", None, )), load("h", (8,2048,4,4096), (None, None, "0", None, ))), False, (None, None, None, ))

    # ---- line 33: gx_{bsd'} = W^0_{r_0 f d'} gy_{b s r_0 f}
    # plan: all-reduce(0)
    specs = {
        0: ("0", None, None, ),
        1: (None, None, "0", None, ),
        2: None,
        3: (None, None, None, ),
    }

    def s4_line33(v0, v1):
        layout = lambda x, i: constrain(x, specs[i])
        # compute: r_0 f d', b s r_0 f -> d' b s
        v2 = jnp.einsum("abc,deab->cde", v0, v1)
        v2 = layout(v2, 2)
        # all-reduce(0) (all-reduce %1 over axis 0 (sum): the left-hand side asks for it)
        v3 = regroup(v2, "cde", "cde", (4096,8,2048))
        v3 = layout(v3, 3)
        out = regroup(v3, "cde", "dec", (8,2048,4096))
        return out

    step = jax.jit(s4_line33, in_shardings=(named(("0", None, None, )), named((None, None, "0", None, )), ), out_shardings=named((None, None, None, )))
    store(33, "gx", step(load("W^0", (4,4096,4096), ("0", None, None, )), load("gy", (8,2048,4,4096), (None, None, "0", None, ))), False, (None, None, None, ))

    # ---- line 36: gW^0_{r_0 f d'} = x_{bsd'} gy_{b s r_0 f}
    # plan: no collectives
    specs = {
        0: (None, None, None, ),
        1: (None, None, "0", None, ),
        2: (None, "0", None, ),
    }

    def s5_line36(v0, v1):
        layout = lambda x, i: constrain(x, specs[i])
        # compute: b s d', b s r_0 f -> d' r f
        v2 = jnp.einsum("abc,abde->cde", v0, v1)
        v2 = layout(v2, 2)
        out = regroup(v2, "cde", "dec", (4,4096,4096))
        return out

    step = jax.jit(s5_line36, in_shardings=(named((None, None, None, )), named((None, None, "0", None, )), ), out_shardings=named(("0", None, None, )))
    store(36, "gW^0", step(load("x", (8,2048,4096), (None, None, None, )), load("gy", (8,2048,4,4096), (None, None, "0", None, ))), False, ("0", None, None, ))


if __name__ == "__main__":
    main()
