#!/usr/bin/env bash
# The exported JAX and PyTorch scripts run and print what shardscope's exec computes:
# test_numbers.sh jax|torch SHARDSCOPE REFERENCE_VALUES SOURCE_DIR
# For every sample (and the backward passes of three, and tests/export/chain_products.ein),
# `export --to jax|torch --small`, run it in f64 on random data and compare every element of
# every result with reference_values (exec's values, after its plan verified on sim ranks);
# then the DTensor walkthrough in f32 on arange data.
# jax: XLA_FLAGS=--xla_force_host_platform_device_count=8, CPU devices; python3's own jax
# where it has one (the GPU machine's), else a venv (scripts/setup.sh); exit 77 (skipped) only
# when jax cannot be installed: the package index is unreachable, or python3 cannot make a venv.
# torch: `python -m torch.distributed.run --standalone --nproc-per-node N` (N from the
# script's header), gloo on the CPU (--device cpu), with SHARDSCOPE_TORCH_PYTHON or the torch
# venv (scripts/setup.sh installs it once); exit 77 (skipped, saying why) only when torch
# cannot be installed, as for jax.
set -uo pipefail
target=$1 bin=$2 ref=$3 src=$4
# shellcheck source=../../scripts/setup.sh
source "$src/scripts/setup.sh"
case $target in
jax)
    jax_test_python
    py=$JAX_PY
    ;;
torch)
    torch_test_python
    py=$TORCH_PY
    export OMP_NUM_THREADS=1 # one thread per rank (torchrun's default, without its warning)
    # Each rank is a python process with torch loaded (about 0.5 GB): 64 ranks do not fit in
    # 24 GB (the kernel's OOM killer ended them, 2026-11-26). A sample whose ranks need more
    # than the memory available is skipped, saying so; the others must pass.
    rank_kib=$("$py" -c 'import resource, torch.distributed
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)')
    ;;
*)
    echo "usage: test_numbers.sh jax|torch SHARDSCOPE REFERENCE_VALUES SOURCE_DIR" >&2
    exit 2
    ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
compare() { # compare SCRIPT_OUT REF_OUT TOLERANCE
    python3 - "$1" "$2" "$3" "$target" <<'PY'
import sys
def read(path):
    out = {}
    for line in open(path):
        if line.startswith("VALUES "):
            parts = line.split()
            out[(parts[1], parts[2])] = [float(v) for v in parts[4:]]
    return out
have_all, ref, tol = read(sys.argv[1]), read(sys.argv[2]), float(sys.argv[3])
if not ref or set(have_all) != set(ref):
    sys.exit(f"different statements: {sys.argv[4]} {sorted(have_all)} vs shardscope {sorted(ref)}")
worst = 0.0
for key, want in ref.items():
    have = have_all[key]
    if len(have) != len(want):
        sys.exit(f"line {key[0]} {key[1]}: {len(have)} values vs {len(want)}")
    scale = max([abs(v) for v in want] + [1e-300])
    err = max([abs(a - b) for a, b in zip(have, want)] + [0.0]) / scale
    worst = max(worst, err)
    if err > tol:
        sys.exit(f"line {key[0]} {key[1]}: relative error {err:.3g} > {tol}")
print(f"{len(ref)} results agree (worst relative error {worst:.2g})")
PY
}
execute() { # execute SCRIPT DATA SEED DTYPE: run an exported script, printing every value
    local opts=(--data "$2" --seed "$3" --dtype "$4" --values)
    if [ "$target" = jax ]; then
        # As many CPU devices as the plan's mesh has (the script's header says how many).
        local devices
        devices=$(sed -n 's/^# Run: XLA_FLAGS=--xla_force_host_platform_device_count=\([0-9]*\) .*/\1/p' "$1")
        XLA_FLAGS=--xla_force_host_platform_device_count=${devices:-8} "$py" "$1" "${opts[@]}"
        return
    fi
    local n
    n=$(sed -n 's/^# Run: torchrun --nproc-per-node \([0-9]*\) .*/\1/p' "$1")
    [ -n "$n" ] || { echo "no rank count in $1's header" >&2; return 1; }
    "$py" -m torch.distributed.run --standalone --nproc-per-node "$n" "$1" --device cpu "${opts[@]}"
}
failed=0 count=0 skipped=0
mem_available_kib() { sed -n 's/^MemAvailable: *\([0-9]*\) kB/\1/p' /proc/meminfo; }
# torch: whether N ranks of rank_kib each fit in MemAvailable (with a fifth to spare).
ranks_fit() {
    local avail
    avail=$(mem_available_kib)
    [ -z "$avail" ] || [ $(($1 * rank_kib * 6 / 5)) -le "$avail" ]
}
run() { # run NAME FILE DATA SEED DTYPE TOLERANCE
    local name=$1 file=$2 data=$3 seed=$4 dtype=$5 tol=$6 result='' n
    if ! "$bin" export --to "$target" --small "$file" -o "$tmp/$name.py"; then
        count=$((count + 1))
        echo "FAIL: $name: export failed"
        failed=$((failed + 1))
        return
    fi
    if [ "$target" = torch ]; then
        n=$(sed -n 's/^# Run: torchrun --nproc-per-node \([0-9]*\) .*/\1/p' "$tmp/$name.py")
        if [ -n "$n" ] && ! ranks_fit "$n"; then
            echo "skipped: $name: $n ranks of torch need about $((n * rank_kib / 1024 / 1024 + 1)) GB; $(($(mem_available_kib) / 1024 / 1024)) GB available"
            skipped=$((skipped + 1))
            return
        fi
    fi
    count=$((count + 1))
    # torchrun's launch can fail for reasons of the machine (a rendezvous port taken, a rank
    # killed for memory while other tests run): a run that fails is tried once more, saying
    # why. A wrong number is no failed run (it is compared below) and is never retried.
    local ran=0
    if execute "$tmp/$name.py" "$data" "$seed" "$dtype" >"$tmp/$name.out" 2>"$tmp/$name.err"; then
        ran=1
    elif [ "$target" = torch ]; then
        echo "WARNING: $name: torchrun failed; trying once more. Its first errors:"
        grep -m 5 -E "Error|error:|terminate|what\(\)|Signal|Aborted|Killed" "$tmp/$name.err"
        tail -3 "$tmp/$name.err"
        execute "$tmp/$name.py" "$data" "$seed" "$dtype" >"$tmp/$name.out" 2>"$tmp/$name.err" &&
            ran=1
    fi
    if [ "$ran" -eq 0 ] || ! "$ref" "$file" "$data" "$seed" >"$tmp/$name.ref" ||
        ! result=$(compare "$tmp/$name.out" "$tmp/$name.ref" "$tol"); then
        echo "FAIL: $name ($data, $dtype): $result"
        # The first error of any rank (torchrun's summary comes last), then the end.
        grep -m 5 -E "Error|error:|terminate|what\(\)|Signal|Aborted" "$tmp/$name.err"
        tail -5 "$tmp/$name.err"
        failed=$((failed + 1))
    else
        echo "ok: $name ($data, $dtype): $result"
    fi
}
for f in "$src"/samples/*.ein; do
    run "$(basename "$f" .ein)" "$f" random 5 f64 1e-9
done
# The backward passes (shardscope grad) run too.
# transformer_layer: repeated layers and their reverse block (the tape of saved layers).
for s in megatron_mlp fsdp_tp transformer_layer; do
    "$bin" grad --small "$src/samples/$s.ein" >"$tmp/$s.grad.ein" 2>/dev/null
    run "$s.grad" "$tmp/$s.grad.ein" random 7 f64 1e-9
done
# Chains of products: the factors a chain moves are stored, and later statements (and later
# layers of a repeat) read them from there.
run chain_products "$src/tests/export/chain_products.ein" random 11 f64 1e-9
run dtensor_matmul.arange "$src/samples/dtensor_matmul.ein" arange 0 f32 1e-6
if [ "$skipped" -gt 0 ]; then
    echo "$((count - failed)) passed, $failed failed, $skipped skipped (not enough memory for their ranks)"
else
    echo "$((count - failed)) passed, $failed failed"
fi
[ "$failed" -eq 0 ]
