#!/usr/bin/env python3
"""DTensor conformance: the DTensor matmul walkthrough's statements through PyTorch DTensor and
through `shardscope exec --data arange --dtype f64 --show`, with every rank's placement and
local numbers compared. DTensor runs on one process per rank: NCCL on the GPUs when there
are enough, gloo on the CPU otherwise. Exits 77 (skipped) where torch.distributed is missing.

Usage: dtensor_conformance.py SHARDSCOPE [sim|cuda]
"""
import gc
import json
import os
import re
import socket
import subprocess
import sys
import tempfile

RANKS = 2
HEADER = "mesh 2\ndim i=4 k=6 j=4\n"
# name, statement, x placement, y placement, what DTensor computes (x, y, mesh -> DTensor)
CASES = [
    ("zRR", "zRR_{ij} = x_{ik} y_{kj}", "R", "R", "x @ y"),
    ("zRS", "zRS_{i j_0} = x_{ik} y_{k j_0}", "R", "S(1)", "x @ y"),
    ("zSR", "zSR_{i_0 j} = x_{i_0 k} y_{kj}", "S(0)", "R", "x @ y"),
    ("zP", "zP_{ij}{U_0} = x_{i k_0} y_{k_0 j}", "S(1)", "S(0)", "x @ y"),
    ("z", "z_{ij} = x_{i k_0} y_{k_0 j}", "S(1)", "S(0)", "(x @ y).redistribute(mesh, [Replicate()])"),
    ("xT", "xT_{k i_0} = x_{i_0 k}", "S(0)", "R", "x.T"),
]


def placement_text(p):
    """DTensor's placement as shardscope writes it: R, S(d), P(sum)."""
    name = type(p).__name__
    if name == "Replicate":
        return "R"
    if name == "Shard":
        return f"S({p.dim})"
    return f"P({getattr(p, 'reduce_op', 'sum')})"


def worker(rank, port, out_dir):
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    gpu = torch.cuda.is_available() and torch.cuda.device_count() >= RANKS
    if gpu:
        torch.cuda.set_device(rank)
    dist.init_process_group("nccl" if gpu else "gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=RANKS)
    mesh = init_device_mesh("cuda" if gpu else "cpu", (RANKS,))
    parse = {"R": Replicate(), "S(0)": Shard(0), "S(1)": Shard(1)}
    results = {}
    for name, _, px, py, expr in CASES:
        # --data arange: each input is 1, 2, 3, ... in row-major order.
        xg = torch.arange(1, 25, dtype=torch.float64).reshape(4, 6)
        yg = torch.arange(1, 25, dtype=torch.float64).reshape(6, 4)
        x = distribute_tensor(xg, mesh, [parse[px]])
        y = distribute_tensor(yg, mesh, [parse[py]])
        z = eval(expr, {"Replicate": Replicate}, {"x": x, "y": y, "mesh": mesh})
        results[name] = {"placement": placement_text(z.placements[0]),
                         "local": z.to_local().cpu().flatten().tolist()}
    with open(os.path.join(out_dir, f"{rank}.json"), "w") as f:
        json.dump({"gpu": gpu, "results": results}, f)
    # Both ranks done and the DTensors freed while the process group lives: left to the
    # interpreter's exit (some sit in reference cycles), gloo sometimes aborts the process.
    dist.barrier()
    del x, y, z
    gc.collect()
    dist.destroy_process_group()


def shardscope_ranks(binary, backend, name, statement, work):
    """Every rank's placement and local numbers of `name`, from exec --show."""
    path = os.path.join(work, f"{name}.ein")
    with open(path, "w") as f:
        f.write(HEADER + statement + "\n")
    out = subprocess.run([binary, "exec", "--backend", backend, "--data", "arange", "--dtype",
                          "f64", "--show", name, path], capture_output=True, text=True)
    if out.returncode == 2 and "needs an NVIDIA GPU" in out.stderr:
        print(f"SKIPPED: {out.stderr.strip()}")
        sys.exit(77)
    if out.returncode != 0:
        raise SystemExit(f"shardscope exec failed on {statement!r}:\n{out.stdout}{out.stderr}")
    ranks = {}
    current = None
    for line in out.stdout.splitlines():
        m = re.match(r"^\s*rank (\d+) \(.*?\), (\S+) \((.*)\): (.*)$", line)
        if m and m.group(2) == name:
            current = int(m.group(1))
            ranks[current] = {"placement": m.group(3), "text": m.group(4)}
        elif current is not None and re.match(r"^\s+[\[\d-]", line) and "rank" not in line:
            ranks[current]["text"] += " " + line
        else:
            current = None
    for r in ranks.values():
        r["local"] = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", r.pop("text"))]
    return ranks


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    binary, backend = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "sim"
    try:
        import torch  # noqa: F401
        import torch.distributed as dist
        import torch.multiprocessing as mp
        from torch.distributed.tensor import distribute_tensor  # noqa: F401
        if not dist.is_available():
            raise ImportError("torch.distributed is not available")
    except ImportError as e:
        print(f"SKIPPED: PyTorch DTensor is not importable here ({e})")
        return 77
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as work:
        mp.spawn(worker, args=(port, work), nprocs=RANKS, join=True)
        dtensor = [json.load(open(os.path.join(work, f"{r}.json"))) for r in range(RANKS)]
        print(f"DTensor on {'the GPUs (nccl)' if dtensor[0]['gpu'] else 'the CPU (gloo)'}, "
              f"shardscope on {backend}")
        failures = 0
        for name, statement, _, _, _ in CASES:
            ours = shardscope_ranks(binary, backend, name, statement, work)
            for r in range(RANKS):
                theirs = dtensor[r]["results"][name]
                mine = ours.get(r)
                if mine is None or mine["placement"] != theirs["placement"] or \
                        mine["local"] != theirs["local"]:
                    failures += 1
                    print(f"FAIL {statement} rank {r}: shardscope {mine} DTensor {theirs}")
            if all(ours.get(r) and ours[r]["local"] == dtensor[r]["results"][name]["local"]
                   for r in range(RANKS)):
                print(f"ok   {statement}: {ours[0]['placement']} on both, local tensors equal")
        print(f"{len(CASES)} statements, {failures} mismatches")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
