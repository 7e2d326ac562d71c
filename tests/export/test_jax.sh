#!/usr/bin/env bash
# The exported JAX scripts run on CPU devices and print what shardscope's exec computes:
# test_jax.sh SHARDSCOPE REFERENCE_VALUES SOURCE_DIR
# For every sample (and the backward passes of two), `export --to jax --small`, run it with
# XLA_FLAGS=--xla_force_host_platform_device_count=8 in f64 on random data, and compare every
# element of every result with reference_values (exec's values, after its plan verified on sim
# ranks); then the DTensor walkthrough in f32 on arange data. Uses python3's own jax where it
# has one (the GPU machine's), else a venv (scripts/setup.sh). Exit 77 (skipped) only when jax
# cannot be installed: the package index is unreachable, or python3 cannot make a venv.
set -uo pipefail
bin=$1 ref=$2 src=$3
# shellcheck source=../../scripts/setup.sh
source "$src/scripts/setup.sh"
py=$(ensure_jax)
case $? in
0) ;;
1) echo "SKIPPED: $(cat "$SHARDSCOPE_JAX_VENV/unavailable")"; exit 77 ;;
*) echo "FAIL: jax could not be installed in $SHARDSCOPE_JAX_VENV (see above)"; exit 1 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XLA_FLAGS=--xla_force_host_platform_device_count=8 JAX_PLATFORMS=cpu
compare() { # compare JAX_OUT REF_OUT TOLERANCE
    python3 - "$1" "$2" "$3" <<'PY'
import sys
def read(path):
    out = {}
    for line in open(path):
        if line.startswith("VALUES "):
            parts = line.split()
            out[(parts[1], parts[2])] = [float(v) for v in parts[4:]]
    return out
jax, ref, tol = read(sys.argv[1]), read(sys.argv[2]), float(sys.argv[3])
if not ref or set(jax) != set(ref):
    sys.exit(f"different statements: jax {sorted(jax)} vs shardscope {sorted(ref)}")
worst = 0.0
for key, want in ref.items():
    have = jax[key]
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
failed=0 count=0
run() { # run NAME FILE DATA SEED DTYPE TOLERANCE
    local name=$1 file=$2 data=$3 seed=$4 dtype=$5 tol=$6
    count=$((count + 1))
    if ! "$bin" export --to jax --small "$file" -o "$tmp/$name.py" ||
        ! "$py" "$tmp/$name.py" --data "$data" --seed "$seed" --dtype "$dtype" --values \
            >"$tmp/$name.jax" 2>"$tmp/$name.err" ||
        ! "$ref" "$file" "$data" "$seed" >"$tmp/$name.ref" ||
        ! result=$(compare "$tmp/$name.jax" "$tmp/$name.ref" "$tol"); then
        echo "FAIL: $name ($data, $dtype): ${result:-}"; tail -5 "$tmp/$name.err"
        failed=$((failed + 1))
    else
        echo "ok: $name ($data, $dtype): $result"
    fi
}
for f in "$src"/samples/*.ein; do
    run "$(basename "$f" .ein)" "$f" random 5 f64 1e-9
done
# The backward passes (shardscope grad) run in JAX too.
for s in megatron_mlp fsdp_tp; do
    "$bin" grad --small "$src/samples/$s.ein" >"$tmp/$s.grad.ein" 2>/dev/null
    run "$s.grad" "$tmp/$s.grad.ein" random 7 f64 1e-9
done
run dtensor_matmul.arange "$src/samples/dtensor_matmul.ein" arange 0 f32 1e-6
echo "$((count - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
