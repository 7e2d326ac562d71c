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
