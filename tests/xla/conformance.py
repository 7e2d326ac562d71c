"""shardscope's plans against XLA's SPMD partitioner (issue 19).

conformance.py SHARDSCOPE [--report-only] [--case NAME]

Every case below is one statement in the notation. shardscope checks all of them in one run
(`check --json`); the placements it prints for the operands and the result become the
NamedShardings of a jax.jit of the same computation on 8 CPU devices. The compiled HLO's
collectives are priced with shardscope's own formulas (semantics/cost.cpp collective_bytes)
and compared with shardscope's bytes per device. See README.md in this folder.
Exit status: 0 when every asserted case has shardscope <= XLA (and every expected loss still
loses), 1 otherwise.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec  # noqa: E402

REL_TOL = 1e-6

# Cases shardscope loses today, with the reason. The test fails if one of them stops losing
# (remove it from here then) as well as when a case not listed here loses.
EXPECTED_LOSSES = {
    # None today. chain_move_axis_big was one until a permute could grow blocks that are no
    # gather of the old ones (2026-11-27): one exchange, XLA's bytes in one collective.
}

def SOFTMAX_LAST(z):
    return jax.nn.softmax(z, axis=-1)


# (name, program, function). The program has the mesh/dim/dtype lines and ONE statement.
# function: None for a product (an einsum built from the statement's indices) or a chain
# (the identity: only the shardings differ), else a callable over the distinct tensors in the
# order shardscope lists the operands.
CASES = [
    ("mm_rows_free", "mesh 4\ndim i=1024 j=1024 k=1024\nC_{i_0 k} = A_{i_0 j} B_{j k}", None),
    ("mm_cols_free", "mesh 8\ndim i=1024 j=1024 k=1024\ndtype bf16\nC_{i k_0} = A_{i j} B_{j k_0}", None),
    ("mm_allreduce", "mesh 4\ndim i=1024 j=4096 k=1024\nC_{i k} = A_{i j_0} B_{j_0 k}", None),
    ("mm_allreduce_bf16", "mesh 8\ndim i=1024 j=4096 k=1024\ndtype bf16\nC_{i k} = A_{i j_0} B_{j_0 k}", None),
    ("mm_reducescatter", "mesh 4\ndim i=1024 j=4096 k=1024\nC_{i_0 k} = A_{i j_0} B_{j_0 k}", None),
    ("mm_reducescatter_k", "mesh 8\ndim i=1024 j=4096 k=1024\nC_{i k_0} = A_{i j_0} B_{j_0 k}", None),
    ("mm_rs_bf16", "mesh 2\ndim i=1024 j=8192 k=1024\ndtype bf16\nC_{i_0 k} = A_{i j_0} B_{j_0 k}", None),
    ("mm_conflict_1d", "mesh 4\ndim i=1024 j=1024 k=1024\nC_{i_0 k} = A_{i_0 j} B_{j_0 k}", None),
    ("mm_conflict_small_b", "mesh 4\ndim i=4096 j=1024 k=256\nC_{i_0 k} = A_{i_0 j} B_{j_0 k}", None),
    ("mm_gather_out", "mesh 4\ndim i=1024 j=1024 k=1024\nC_{i k} = A_{i_0 j} B_{j k}", None),
    ("mm_dp_tp", "mesh 2x4\ndim i=2048 j=1024 k=4096\ndtype bf16\nC_{i_0 k_1} = A_{i_0 j} B_{j k_1}", None),
    ("mm_tp_allreduce_2d", "mesh 2x4\ndim i=2048 j=4096 k=1024\ndtype bf16\nC_{i_0 k} = A_{i_0 j_1} B_{j_1 k}", None),
    ("mm_tp_rs_2d", "mesh 2x4\ndim i=2048 j=4096 k=1024\nC_{i_0 k_1} = A_{i_0 j_1} B_{j_1 k}", None),
    ("mm_two_axes_ar", "mesh 2x4\ndim i=1024 j=8192 k=1024\nC_{i k} = A_{i j_{01}} B_{j_{01} k}", None),
    ("mm_two_axes_ar_bf16", "mesh 2x2x2\ndim i=1024 j=8192 k=1024\ndtype bf16\nC_{i k} = A_{i j_{012}} B_{j_{012} k}", None),
    ("mm_two_axes_rs", "mesh 2x4\ndim i=1024 j=8192 k=1024\nC_{i_{01} k} = A_{i j_{01}} B_{j_{01} k}", None),
    ("mm_two_axes_ar_10", "mesh 2x4\ndim i=1024 j=8192 k=1024\nC_{i k} = A_{i j_{10}} B_{j_{10} k}", None),
    ("mm_2d_both_contract", "mesh 2x4\ndim i=1024 j=2048 k=1024\nC_{i k_1} = A_{i j_0} B_{j_0 k_1}", None),
    ("mm_named_tp", "mesh dp=2 tp=4\ndim i=2048 j=4096 k=2048\ndtype bf16\nC_{i_{dp} k} = A_{i_{dp} j_{tp}} B_{j_{tp} k}", None),
    ("mm_named_fsdp", "mesh dp=2 tp=4\ndim i=2048 j=1024 k=2048\ndtype bf16\nC_{i_{dp} k_{tp}} = A_{i_{dp} j} B_{j k_{tp}}", None),
    ("mm_3d_free", "mesh 2x2x2\ndim i=1024 j=1024 k=1024\nC_{i_{01} k_2} = A_{i_{01} j} B_{j k_2}", None),
    ("mm_3d_contract", "mesh 2x2x2\ndim i=1024 j=2048 k=1024\nC_{i_0 k_1} = A_{i_0 j_2} B_{j_2 k_1}", None),
    ("mm_3d_rs", "mesh 2x2x2\ndim i=1024 j=2048 k=1024\ndtype bf16\nC_{i_{02} k_1} = A_{i_0 j_2} B_{j_2 k_1}", None),
    ("mv_allreduce", "mesh 4\ndim i=4096 k=4096\ny_{i} = x_{i k_0} w_{k_0}", None),
    ("dot_allreduce", "mesh 8\ndim e=1048576\nz = x_{e_0} y_{e_0}", None),
    ("outer_free", "mesh 2x2\ndim m=1024 n=1024\nz_{m_0 n_1} = a_{m_0} b_{n_1}", None),
    ("megatron_up", "mesh 4\ndim b=8 s=512 d=1024 f=4096\ndtype bf16\nh_{b s f_0} = x_{b s d} W_{d f_0}", None),
    ("megatron_down", "mesh 4\ndim b=8 s=512 d=1024 f=4096\ndtype bf16\ny_{b s d} = h_{b s f_0} W_{f_0 d}", None),
    ("megatron_down_rs", "mesh 4\ndim b=8 s=512 d=1024 f=4096\ndtype bf16\ny_{b s_0 d} = h_{b s f_0} W_{f_0 d}", None),
    ("megatron_dp_tp", "mesh dp=2 tp=4\ndim b=8 s=512 d=1024 f=4096\ndtype bf16\ny_{b_{dp} s d} = h_{b_{dp} s f_{tp}} W_{f_{tp} d}", None),
    ("fsdp_weight_conflict", "mesh dp=2 tp=4\ndim b=16 s=256 d=1024 f=4096\ndtype bf16\nh_{b_{dp} s f_{tp}} = x_{b_{dp} s d} W_{d_{dp} f_{tp}}", None),
    ("batched_dp", "mesh 8\ndim b=64 s=128 d=512 e=512\ny_{b_0 s e} = x_{b_0 s d} W_{d e}", None),
    ("batched_sp_contract", "mesh 2x4\ndim b=8 s=1024 d=512 e=512\ny_{b_0 d e} = x_{b_0 s_1 d} z_{b_0 s_1 e}", None),
    ("grad_weight_dp", "mesh 8\ndim b=64 s=128 d=512 e=512\ngW_{d e} = x_{b_0 s d} g_{b_0 s e}", None),
    ("grad_weight_dp_sp", "mesh 2x4\ndim b=16 s=512 d=512 e=512\ngW_{d e} = x_{b_0 s_1 d} g_{b_0 s_1 e}", None),
    ("grad_weight_dp_rs", "mesh 8\ndim b=64 s=128 d=512 e=512\ngW_{d_0 e} = x_{b_0 s d} g_{b_0 s e}", None),
    ("attn_scores_heads", "mesh 4\ndim b=2 h=16 q=512 k=512 x=64\ndtype bf16\nS_{b h_0 q k} = Q_{b h_0 q x} K_{b h_0 k x}", None),
    ("attn_out_heads", "mesh 4\ndim b=2 h=16 q=512 k=512 x=64\ndtype bf16\nO_{b h_0 q x} = A_{b h_0 q k} V_{b h_0 k x}", None),
    ("attn_scores_seq_q", "mesh 2x4\ndim b=4 h=8 q=1024 k=1024 x=64\ndtype bf16\nS_{b_0 h q_1 k} = Q_{b_0 h q_1 x} K_{b_0 h k x}", None),
    ("attn_scores_seq_k", "mesh 4\ndim b=2 h=8 q=1024 k=1024 x=64\ndtype bf16\nS_{b h q k_0} = Q_{b h q x} K_{b h k_0 x}", None),
    ("attn_out_seq_k", "mesh 4\ndim b=2 h=8 q=1024 k=1024 x=64\ndtype bf16\nO_{b h q x} = A_{b h q k_0} V_{b h k_0 x}", None),
    ("attn_out_seq_k_f32", "mesh 2x4\ndim b=2 h=8 q=1024 k=1024 x=64\nO_{b_0 h q x} = A_{b_0 h q k_1} V_{b_0 h k_1 x}", None),
    ("attn_ring_conflict", "mesh 4\ndim b=2 h=8 q=1024 k=1024 x=64\ndtype bf16\nS_{b h q_0 k} = Q_{b h q_0 x} K_{b h k_0 x}", None),
    ("attn_heads_proj", "mesh 2x4\ndim b=4 s=512 m=1024 h=16 x=64\ndtype bf16\nQ_{b_0 s h_1 x} = X_{b_0 s m} W_{m h_1 x}", None),
    ("attn_out_proj", "mesh 2x4\ndim b=4 s=512 m=1024 h=16 x=64\ndtype bf16\nY_{b_0 s m} = O_{b_0 s h_1 x} W_{h_1 x m}", None),
    ("softmax_sharded_f32", "mesh 4\ndim s=128 v=4096\np_{s v_0} = softmax_v(z_{s v_0})", SOFTMAX_LAST),
    ("softmax_sharded_bf16", "mesh dp=2 tp=4\ndim s=512 v=8192\ndtype bf16\np_{s_{dp} v_{tp}} = softmax_v(z_{s_{dp} v_{tp}})", SOFTMAX_LAST),
    ("softmax_rows", "mesh 8\ndim s=1024 v=1024\np_{s_0 v} = softmax_v(z_{s_0 v})", SOFTMAX_LAST),
    ("relu_allreduce", "mesh 4\ndim i=1024 k=4096\ny_{i} = relu(x_{i k_0} w_{k_0})", lambda x, w: jax.nn.relu(x @ w)),
    ("chain_gather", "mesh 4\ndim i=1024 j=1024\nx_{i_0 j} -> x_{i j}", None),
    ("chain_gather_bf16", "mesh 8\ndim i=2048 j=1024\ndtype bf16\nx_{i j_0} -> x_{i j}", None),
    ("chain_gather_2axes", "mesh 2x4\ndim i=1024 j=1024\nx_{i_{01} j} -> x_{i j}", None),
    ("chain_gather_minor", "mesh 2x4\ndim i=1024 j=1024\nx_{i_{01} j} -> x_{i_0 j}", None),
    ("chain_gather_major", "mesh 2x4\ndim i=1024 j=1024\nx_{i_{01} j} -> x_{i_1 j}", None),
    ("chain_gather_3d", "mesh 2x2x2\ndim i=1024 j=1024\ndtype bf16\nx_{i_{012} j} -> x_{i j}", None),
    ("chain_gather_one_of_two", "mesh 2x4\ndim i=1024 j=1024\nx_{i_0 j_1} -> x_{i j_1}", None),
    ("chain_slice", "mesh 2x4\ndim i=1024 j=1024\nx_{i j} -> x_{i_0 j_1}", None),
    ("chain_slice_deeper", "mesh 2x4\ndim i=1024 j=1024\nx_{i_0 j} -> x_{i_{01} j}", None),
    ("chain_all_to_all", "mesh 4\ndim i=1024 j=1024\nx_{i_0 j} -> x_{i j_0}", None),
    ("chain_all_to_all_bf16", "mesh 8\ndim i=2048 j=2048\ndtype bf16\nx_{i j_0} -> x_{i_0 j}", None),
    ("chain_all_to_all_2d", "mesh 2x4\ndim i=1024 j=1024\nx_{i_1 j} -> x_{i j_1}", None),
    ("chain_all_to_all_3d", "mesh 2x2x2\ndim b=64 s=256 d=256\nx_{b_0 s_1 d} -> x_{b_0 s d_1}", None),
    ("chain_move_axis", "mesh 2x4\ndim i=512 j=512\nx_{i_0 j} -> x_{i_1 j}", None),
    ("chain_move_axis_big", "mesh 2x4\ndim i=2048 j=2048\ndtype bf16\nx_{i_1 j} -> x_{i_0 j}", None),
    ("chain_move_axis_huge", "mesh 2x4\ndim i=4096 j=4096\ndtype bf16\nx_{i_1 j} -> x_{i_0 j}", None),
    ("chain_move_axis_2x2", "mesh 2x2\ndim i=1024 j=1024\nx_{i_0 j} -> x_{i_1 j}", None),
    ("chain_swap", "mesh 2x2\ndim i=1024 j=1024\nx_{i_0 j_1} -> x_{i_1 j_0}", None),
    ("chain_swap_2x4", "mesh 2x4\ndim i=1024 j=1024\nx_{i_0 j_1} -> x_{i_1 j_0}", None),
    ("chain_swap_order", "mesh 2x4\ndim i=1024 j=1024\nx_{i_{01} j} -> x_{i_{10} j}", None),
    ("chain_move_dim_axis", "mesh 2x4\ndim i=1024 j=1024\nx_{i_0 j} -> x_{i j_1}", None),
    ("chain_named_move", "mesh dp=2 tp=4\ndim b=32 s=1024 d=512\ndtype bf16\nx_{b_{dp} s_{tp} d} -> x_{b_{dp} s d_{tp}}", None),
    ("chain_3d_move", "mesh 2x2x2\ndim i=1024 j=1024\nx_{i_0 j_1} -> x_{i_2 j_1}", None),
    ("chain_3d_rotate", "mesh 2x2x2\ndim i=1024 j=1024 k=8\nx_{i_0 j_1 k_2} -> x_{i_1 j_2 k_0}", None),
    # Chains of products that move several tensors (issue 19): each arrow moves every factor
    # whose layout changes, each by its own redistribution; XLA sees the identity over them.
    ("chain2_gather_both", "mesh 4\ndim i=1024 j=1024 k=1024\nA_{i_0 j} B_{j k_0} -> A_{i j} B_{j k}", None),
    ("chain2_all_to_all_and_move", "mesh 2x4\ndim i=1024 j=1024 k=512\ndtype bf16\nA_{i_0 j} B_{j_1 k} -> A_{i j_0} B_{j k_1}", None),
    ("chain2_sequence_parallel", "mesh dp=2 tp=4\ndim b=8 s=1024 d=512 f=2048\ndtype bf16\nW_{d_{tp} f} x_{b_{dp} s_{tp} d} -> W_{d f_{tp}} x_{b_{dp} s d}", None),
    ("chain2_two_arrows", "mesh 2x2\ndim i=1024 j=1024 k=1024\nA_{i_0 j} B_{j k_1} -> A_{i j_1} B_{j k_1} -> A_{i j_1} B_{j_0 k}", None),
    # Ring steps written as Permute_{i_k} (ring attention's rotation): XLA compiles jnp.roll
    # by one block of the sharded index to a collective-permute.
    ("ring_permute", "mesh 2x4\ndim s=4096 d=512\ndtype bf16\ny_{s_1 d} = Permute_{s_1}(x_{s_1 d})",
     lambda x: jnp.roll(x, 4096 // 4, 0)),
    ("ring_permute_group", "mesh 2x4\ndim s=4096 d=512\ny_{s_{01} d} = Permute_{s_{01}}(x_{s_{01} d})",
     lambda x: jnp.roll(x, 4096 // 8, 0)),
    ("ring_permute_minor", "mesh dp=2 sp=4\ndim b=16 s=2048 d=256\nk_{b_{dp} s_{sp} d} = Permute_{s_{sp}}(x_{b_{dp} s_{sp} d})",
     lambda x: jnp.roll(x, 2048 // 4, 1)),
]


# ---------------------------------------------------------------------------------------
# shardscope side

def index_axes(index, axis_names):
    """'J_{0,1}' -> ['0', '1'] (major to minor); 'v_tp' -> ['tp']; 'i' -> []."""
    if "_" not in index:
        return []
    sub = index.split("_", 1)[1].strip("{}")
    parts = [p for p in re.split(r"[,\s]+", sub) if p]
    if len(parts) == 1 and parts[0] not in axis_names:
        parts = list(parts[0])  # b_{01}
    return parts


def index_base(index):
    return index.split("_", 1)[0]


def partition_spec(occurrence, axis_names):
    """The PartitionSpec of one tensor occurrence, from its placements (which axis shards
    which dimension) and its indices (the order of several axes on one dimension)."""
    dims = [[] for _ in occurrence["indices"]]
    for axis, placement in zip(axis_names, occurrence["placements"]):
        if placement == "R":
            continue
        m = re.fullmatch(r"S\((\d+)\)", placement)
        if not m:
            raise ValueError(f"placement {placement} has no NamedSharding")
        dims[int(m.group(1))].append(axis)
    spec = []
    for d, axes in enumerate(dims):
        order = index_axes(occurrence["indices"][d], axis_names)
        axes.sort(key=lambda a: order.index(a) if a in order else len(order))
        spec.append(None if not axes else axes[0] if len(axes) == 1 else tuple(axes))
    return spec


def global_shape(occurrence, spec, sizes):
    shape = []
    for extent, axes in zip(occurrence["local_shape"], spec):
        if axes is None:
            shape.append(extent)
        else:
            for a in (axes if isinstance(axes, tuple) else (axes,)):
                extent *= sizes[a]
            shape.append(extent)
    return shape


# ---------------------------------------------------------------------------------------
# XLA side: the collectives of the compiled HLO

COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
DTYPE_BYTES = {"f32": 4, "bf16": 2, "f16": 2, "f64": 8}


def split_top(text, sep=","):
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == sep and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def matching(text, start):
    """Index just past the bracket that closes text[start]."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError("unbalanced: " + text)


def shape_elements(shape):
    """Elements of every array in an HLO shape ('f32[4,8]{1,0}' or a tuple of them)."""
    total = 0
    for m in re.finditer(r"\b[a-z]+\d*\[([\d,]*)\]", shape):
        dims = [int(d) for d in m.group(1).split(",") if d]
        total += int(np.prod(dims)) if dims else 1
    return total


def parse_hlo(text):
    """{computation: [instruction]}; instruction = dict(name, shape, op, operands, attrs)."""
    comps, cur = {}, None
    for line in text.splitlines():
        s = line.strip()
        m = re.match(r"(ENTRY\s+)?%?([\w.\-]+)\s.*\{$", s)
        if m and " = " not in s.split("{")[0]:
            cur = m.group(2)
            comps[cur] = []
            continue
        if s == "}" or cur is None or " = " not in s:
            continue
        lhs, rhs = s.split(" = ", 1)
        name = lhs.replace("ROOT", "").strip().lstrip("%")
        if rhs.startswith("("):
            end = matching(rhs, 0)
            shape, rest = rhs[:end], rhs[end:].strip()
        else:
            shape, rest = rhs.split(" ", 1)
        op = rest[: rest.index("(")]
        end = matching(rest, len(op))
        operands = [o.split()[-1].lstrip("%") for o in split_top(rest[len(op) + 1 : end - 1])]
        comps[cur].append(dict(name=name, shape=shape, op=op, operands=operands,
                               attrs=rest[end:]))
    return comps


def group_size(attrs, devices):
    m = re.search(r"replica_groups=(\S+)(?:\s+(\{[^}]*\}))?", attrs)
    if not m:
        return devices
    groups = m.group(1)
    if groups.startswith("mesh["):  # mesh['axis_0'=2,'axis_1'=4] {'axis_1'}
        sizes = dict((k, int(v)) for k, v in re.findall(r"'([^']+)'=(\d+)", groups))
        names = re.findall(r"'([^']+)'", m.group(2) or "")
        return int(np.prod([sizes[n] for n in names])) if names else devices
    if groups.startswith("["):  # iota: [groups,size]<=[...]
        return int(re.match(r"\[(\d+),(\d+)\]", groups).group(2))
    first = re.match(r"\{\{([^}]*)\}", groups)
    if not first:
        return devices  # {}: all devices
    return len([d for d in first.group(1).split(",") if d.strip()])


PASS_THROUGH = {"parameter", "convert", "bitcast", "copy", "reshape"}


def body_ops(comps, inst):
    called = re.search(r"calls=%?([\w.\-]+)", inst["attrs"])
    return {i["op"] for i in comps.get(called.group(1), [])} if called else set()


def sliced_by_partition(comps, comp, inst, n, elements=None):
    """The CPU artifact: an all-reduce whose result is only dynamic-sliced to 1/n of it
    (directly or inside a fusion that also takes partition-id), possibly after element-type
    conversions (the bf16 widening: all-reduce in f32, convert back, then slice), is a
    reduce-scatter."""
    elements = elements or shape_elements(inst["shape"])
    users = [u for u in comps[comp] if inst["name"] in u["operands"]]
    if not users:
        return False
    for u in users:
        size = shape_elements(u["shape"])
        ops = body_ops(comps, u) if u["op"] == "fusion" else {u["op"]}
        if size == elements and ops <= PASS_THROUGH:  # a conversion: follow its users
            if not sliced_by_partition(comps, comp, u, n, elements):
                return False
            continue
        if size * n != elements or "dynamic-slice" not in ops:
            return False
        if u["op"] == "dynamic-slice":
            continue
        if u["op"] != "fusion":
            return False
        has_pid = any(any(o["op"] == "partition-id" and o["name"] == x
                          for o in comps[comp]) for x in u["operands"])
        if not has_pid and "partition-id" not in ops:
            return False
    return True


def xla_collectives(hlo_text, dtype_bytes, devices):
    """[(kind, n, elements, bytes_per_device)] for every collective, priced like shardscope."""
    comps = parse_hlo(hlo_text)
    # Every collective in the text must be one the parser read (nothing silently dropped).
    written = len(re.findall(r"\s(?:%s)(?:-start)?\(" % "|".join(COLLECTIVES), hlo_text))
    parsed = sum(1 for insts in comps.values() for i in insts
                 if i["op"].removesuffix("-start") in COLLECTIVES)
    if written != parsed:
        raise ValueError(f"HLO has {written} collectives, the parser read {parsed}")
    out = []
    for comp, insts in comps.items():
        for inst in insts:
            op = inst["op"].removesuffix("-start")
            if op not in COLLECTIVES:
                continue
            elements = shape_elements(inst["shape"])
            if inst["op"].endswith("-start") and inst["shape"].startswith("("):
                elements //= 2  # (operand, result) pairs of async starts
            size = elements * dtype_bytes  # counted at the statement's element type
            if op == "collective-permute":
                pairs = re.findall(r"\{(\d+),(\d+)\}",
                                   re.search(r"source_target_pairs=(\{.*?\}\})",
                                             inst["attrs"]).group(1))
                sends = {}
                for src, dst in pairs:
                    if src != dst:
                        sends[src] = sends.get(src, 0) + 1
                busiest = max(sends.values(), default=0)
                out.append(("collective-permute", len(pairs), elements, busiest * size))
                continue
            n = group_size(inst["attrs"], devices)
            f = (n - 1) / n if n > 1 else 0.0
            if op == "all-reduce" and n > 1 and sliced_by_partition(comps, comp, inst, n):
                out.append(("reduce-scatter*", n, elements, f * size))
            elif op == "all-reduce":
                out.append((op, n, elements, 2 * f * size))
            elif op == "all-gather":
                out.append((op, n, elements, f * size))
            elif op == "reduce-scatter":
                out.append((op, n, elements * n, f * size * n))
            else:  # all-to-all: the local piece
                out.append((op, n, elements, f * size))
    return out


# ---------------------------------------------------------------------------------------

def build_function(statement, distinct):
    """An einsum over the distinct operands (a product), or the identity (a chain)."""
    if " -> " in statement["source"] or "→" in statement["source"]:
        return lambda x: x
    letters = {}

    def spec(indices):
        out = ""
        for i in indices:
            base = index_base(i)
            letters.setdefault(base, "abcdefghijklmnopqrstuvwxyz"[len(letters)])
            out += letters[base]
        return out

    inputs = ",".join(spec(o["indices"]) for o in distinct)
    formula = f"{inputs}->{spec(statement['result']['indices'])}"
    return lambda *xs: jnp.einsum(formula, *xs, preferred_element_type=xs[0].dtype)


def self_test():
    """The HLO reader on the forms of replica groups and pairs this XLA prints (or printed)."""
    assert group_size("replica_groups={{0,4},{1,5},{2,6},{3,7}}, x", 8) == 2
    assert group_size("replica_groups=[2,4]<=[4,2]T(1,0), x", 8) == 4
    assert group_size("replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_1'}, x", 8) == 4
    assert group_size("replica_groups=mesh['a'=2,'b'=2,'c'=2] {'a','c'}, x", 8) == 4
    assert group_size("replica_groups={}, x", 8) == 8
    hlo = """ENTRY %main (p: f32[4,8]) -> f32[4,8] {
  %p = f32[4,8]{1,0} parameter(0)
  %ar = f32[4,8]{1,0} all-reduce(%p), channel_id=1, replica_groups=[4,2]<=[8], to_apply=%add
  %cp = f32[4,8]{1,0} collective-permute(%ar), source_target_pairs={{0,0},{1,2},{1,3},{2,1}}
  ROOT %ag = f32[8,8]{1,0} all-gather(%cp), replica_groups={{0,1},{2,3}}, dimensions={0}
}"""
    got = xla_collectives(hlo, 2, 8)
    assert [c[0] for c in got] == ["all-reduce", "collective-permute", "all-gather"], got
    assert got[0][3] == 2 * 0.5 * 32 * 2  # all-reduce over 2: 2 (n-1)/n V, bf16
    assert got[1][3] == 2 * 32 * 2  # device 1 sends its block twice; {0,0} sends nothing
    assert got[2][3] == 0.5 * 64 * 2  # all-gather: (n-1)/n of the gathered size
    names = [c[0] for c in CASES]
    assert len(names) == len(set(names)) and len(names) >= 60, "60 distinct cases or more"
    assert set(EXPECTED_LOSSES) <= set(names), set(EXPECTED_LOSSES) - set(names)


def main(argv):
    self_test()
    binary = argv[1]
    only = argv[argv.index("--case") + 1] if "--case" in argv else None
    cases = [c for c in CASES if only is None or c[0] == only]
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, program, _ in cases:
            path = os.path.join(tmp, name + ".ein")
            with open(path, "w") as f:
                f.write(program.strip() + "\n")
            paths.append(path)
        run = subprocess.run([binary, "check", "--json", *paths], capture_output=True, text=True)
        try:
            checked = json.loads(run.stdout)
        except json.JSONDecodeError:
            print(run.stdout, run.stderr)
            return 1
    devices = jax.devices()
    failures, rows = [], []
    by_path = {os.path.basename(f["path"])[:-4]: f for f in checked["files"]}
    for name, program, function in cases:
        f = by_path[name]
        if f.get("errors"):
            failures.append(f"{name}: shardscope reports errors: {f['diagnostics']}")
            continue
        if len(f["statements"]) != 1:
            failures.append(f"{name}: {len(f['statements'])} statements, not one")
            continue
        statement = f["statements"][0]
        axis_names = [a["name"] for a in f["mesh"]]
        sizes = {a["name"]: a["size"] for a in f["mesh"]}
        count = int(np.prod(list(sizes.values())))
        mesh = Mesh(np.array(devices[:count]).reshape(*sizes.values()), tuple(axis_names))
        dtype = {"f32": jnp.float32, "bf16": jnp.bfloat16}[f["dtype"]]
        seen, distinct = set(), []
        chain = "->" in statement["source"] or "→" in statement["source"]
        # A chain's operands are its moved tensors side by side: the first side's k (one per
        # moved tensor, distinct), then k per arrow. A chain of products that moves k > 1
        # tensors is the identity over k arrays, from the first side's layouts to the last's.
        moved = len({o["tensor"] for o in statement["operands"]}) if chain else 1
        for o in statement["operands"][:moved] if chain else statement["operands"]:
            if o["tensor"] not in seen:
                seen.add(o["tensor"])
                distinct.append(o)
        specs = [partition_spec(o, axis_names) for o in distinct]
        args = [jax.ShapeDtypeStruct(global_shape(o, s, sizes), dtype)
                for o, s in zip(distinct, specs)]
        out_spec = partition_spec(statement["result"], axis_names)
        out_sharding = NamedSharding(mesh, PartitionSpec(*out_spec))
        fn = function or build_function(statement, distinct)
        if moved > 1:
            out_sharding = tuple(NamedSharding(mesh, PartitionSpec(*partition_spec(o, axis_names)))
                                 for o in statement["operands"][-moved:])
            fn = lambda *xs: tuple(xs)  # noqa: E731
        try:
            compiled = jax.jit(
                fn, in_shardings=[NamedSharding(mesh, PartitionSpec(*s)) for s in specs],
                out_shardings=out_sharding).lower(*args).compile()
            colls = xla_collectives(compiled.as_text(), DTYPE_BYTES[f["dtype"]], count)
        except Exception as e:  # noqa: BLE001 (one case's failure is reported, not fatal)
            failures.append(f"{name}: XLA side failed: {type(e).__name__}: {e}")
            continue
        xla = sum(c[3] for c in colls)
        ours = statement["cost"]["comm_bytes_per_device"]
        # A chain step is a redistribution the checker searches (issue 19), never implied.
        implied = not statement["chosen"] and not chain
        ours_kinds = {c.split("(")[0] for c in statement["collectives"]}
        xla_kinds = {c[0].rstrip("*").replace("collective-", "") for c in colls if c[3] > 0}
        # An implied plan is the notation's own: asserted only where XLA runs the same kinds
        # of collectives (a different plan of XLA's is an alternative shardscope notes).
        asserted = not implied or xla_kinds <= ours_kinds
        loses = ours > xla * (1 + REL_TOL) + 1e-9
        verdict = "cheaper" if ours < xla * (1 - REL_TOL) else "equal" if not loses else "LOSES"
        if not asserted:
            verdict += " (implied, not asserted)"
        if asserted and loses and name not in EXPECTED_LOSSES:
            failures.append(f"{name}: shardscope {ours:.0f} B > XLA {xla:.0f} B")
        if name in EXPECTED_LOSSES and not (asserted and loses):
            failures.append(f"{name}: listed in EXPECTED_LOSSES but no longer loses "
                            f"(shardscope {ours:.0f} B, XLA {xla:.0f} B): remove it")
        if name in EXPECTED_LOSSES and asserted and loses:
            verdict += " (expected)"
        text = ", ".join(f"{k}[{n}] {e}el {b:.0f}B" for k, n, e, b in colls) or "none"
        rows.append((name, ours, xla, verdict, " ".join(statement["collectives"]) or "none", text))
    width = max(len(r[0]) for r in rows) if rows else 4
    print(f"{'case':{width}}  {'shardscope B':>12}  {'XLA B':>12}  verdict")
    for name, ours, xla, verdict, mine, theirs in rows:
        print(f"{name:{width}}  {ours:12.0f}  {xla:12.0f}  {verdict}")
        print(f"{'':{width}}  shardscope: {mine}\n{'':{width}}  XLA: {theirs}")
    counts = {}
    for r in rows:
        key = r[3].split(" (")[0]
        counts[key] = counts.get(key, 0) + 1
    print(f"{len(rows)} cases: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    for msg in failures:
        print("FAIL: " + msg)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
