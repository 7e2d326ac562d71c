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
