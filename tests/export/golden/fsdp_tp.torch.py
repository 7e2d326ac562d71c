#!/usr/bin/env python3
# PyTorch DTensor: the shardscope plan on a DeviceMesh (torch.distributed.tensor)
# Source: samples/fsdp_tp.ein
# Made by: shardscope export --to torch samples/fsdp_tp.ein
# Mesh: 0=2 x 1=4 (8 devices)
# Run: torchrun --nproc-per-node 8 THIS.py [--data random|arange|ints] [--seed N] [--dtype f32|f64] [--values] [--device auto|cpu|cuda]
# Inputs are shardscope exec's: --data random|arange|ints and --seed N give the same
# numbers, so --values prints what 'shardscope exec' computes.
import argparse
import gc
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh
try:
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
except ImportError:  # torch < 2.4
    from torch.distributed._tensor import DTensor, Replicate, Shard, distribute_tensor
    from torch.distributed._tensor.placement_types import Partial

MESH_SHAPE = (2, 4, )
MESH_AXES = ("0", "1", )
DEVICE_ORDER = [0, 1, 2, 3, 4, 5, 6, 7]  # the rank at each mesh coordinate, row-major

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

    def ring_step(x, axis, shift, pairs):
        """Permute_{i_k}: each (source, destination) of the plan sends the source's whole
        block, point to point; the value moves forward by `shift` along `axis`."""
        me = dist.get_rank()
        local = x.to_local().contiguous()
        got = torch.empty_like(local)
        ops = [dist.P2POp(dist.isend, local, d) for s, d in pairs if s == me]
        ops += [dist.P2POp(dist.irecv, got, s) for s, d in pairs if d == me]
        if not ops:
            return x
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        return DTensor.from_local(got, mesh, x.placements, run_check=False, shape=x.shape,
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

    def store(line, key, out, accumulate, places, reported=True):
        """A statement's store; reported=False: a factor a chain of products moves (stored
        in the chain's layout, not reported: exec reports each statement's target)."""
        out = relayout(out, places)
        if accumulate:
            out = out + load(key, tuple(out.shape), places)
        state[key] = out
        if not reported:
            return
        full = out.full_tensor()  # a collective: every rank takes part
        if rank0:
            report(args, line, key, full.cpu().numpy())

    # ---- line 20: z_{bsd} -> z_{(f c) s (t e)} -> z_{f_0 c s t_1 e}
    # plan: no collectives
    places = {
        0: [Replicate(), Replicate()],
        1: [Replicate(), Replicate()],
        2: [Replicate(), Replicate()],
        3: [Shard(0), Replicate()],
        4: [Shard(0), Shard(3)],
    }
    layout = lambda x, i: relayout(x, places[i])
    v0 = load("z", (16,2048,16384), places[0])
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
    store(20, "z", out, False, [Shard(0), Shard(3)])

    # ---- line 26: W^0_{t_1 e (g_0 n)} -> W^0_{t_1 e m}
    # plan: all-gather(0)
    places = {
        0: [Shard(2), Shard(0)],
        1: [Shard(2), Shard(0)],
        2: [Replicate(), Shard(0)],
    }
    layout = lambda x, i: relayout(x, places[i])
    v0 = load("W^0", (4,4096,2,2048), places[0])
    # split (reshape W^0 (split or merge indices, free))
    v1 = regroup(v0, "abcd", "abe", (4,4096,4096))
    v1 = layout(v1, 1)
    # all-gather(0) (all-gather W^0 over axis 0 (unshard m): the chain asks for it)
    v2 = regroup(v1, "abe", "abe", (4,4096,4096))
    v2 = layout(v2, 2)
    out = regroup(v2, "abe", "abe", (4,4096,4096))
    store(26, "W^0", out, False, [Replicate(), Shard(0)])

    # ---- line 32: h_{f_0 c s t_1 e} = W^0_{t_1 e m} x_{f_0 c s m}
    # plan: no collectives
    places = {
        0: [Replicate(), Shard(0)],
        1: [Shard(0), Replicate()],
        2: [Shard(2), Shard(0)],
    }
    layout = lambda x, i: relayout(x, places[i])
    v0 = load("W^0", (4,4096,4096), places[0])
    v1 = load("x", (2,8,2048,4096), places[1])
    # compute: t_1 e m, f_0 c s m -> t e f c s
    v2 = torch.einsum("abc,defc->abdef", v0, v1)
    v2 = layout(v2, 2)
    out = regroup(v2, "abdef", "defab", (2,8,2048,4,4096))
    store(32, "h", out, False, [Shard(0), Shard(3)])

    # ---- line 37: y_{f_0 c s m} = W^1_{m t_1 e} h_{f_0 c s t_1 e}
    # plan: all-reduce(1)
    places = {
        0: [Replicate(), Shard(1)],
        1: [Shard(0), Shard(3)],
        2: [Shard(1), Partial()],
        3: [Shard(1), Replicate()],
    }
    layout = lambda x, i: relayout(x, places[i])
    v0 = load("W^1", (4096,4,4096), places[0])
    v1 = load("h", (2,8,2048,4,4096), places[1])
    # compute: m t_1 e, f_0 c s t_1 e -> m f c s
    v2 = torch.einsum("abc,defbc->adef", v0, v1)
    v2 = layout(v2, 2)
    # all-reduce(1) (all-reduce %1 over axis 1 (sum): the left-hand side asks for it)
    v3 = regroup(v2, "adef", "adef", (4096,2,8,2048))
    v3 = layout(v3, 3)
    out = regroup(v3, "adef", "defa", (2,8,2048,4096))
    store(37, "y", out, False, [Shard(0), Replicate()])

    # Every rank done, and the DTensors freed while the process group lives (some sit in
    # reference cycles: freed at the interpreter's exit instead, gloo sometimes aborts).
    dist.barrier()
    state.clear()
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
