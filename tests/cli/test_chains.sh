#!/usr/bin/env bash
# Chains of products that move several tensors (issue 19), end to end: the plan text, the JSON
# of `check --json`, the label and S142 errors with their positions, the plan picture
# (`render -o x.svg`) and `exec` on the simulated mesh.
# Usage: test_chains.sh SHARDSCOPE_BINARY REPO_ROOT
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# shellcheck source=checks.sh
source "$(dirname "$0")/checks.sh"
both() { cat "$tmp/out" "$tmp/err" >"$tmp/both"; }

printf 'mesh 4\ndim i=64 j=64 k=64\nA_{i_0 j} B_{j k_0} -> A_{i j} B_{j k}\nexpect all-gather(0), all-gather(0)\n' >"$tmp/two.ein"
check "two tensors move: check" 0 "$bin" check "$tmp/two.ein"
contains "A's step" "$tmp/out" "all-gather A over axis 0 (unshard i)"
contains "B's step" "$tmp/out" "all-gather B over axis 0 (unshard k)"
contains "the statement's total" "$tmp/out" "collectives: all-gather(0), all-gather(0)"

check "two tensors move: --json" 0 "$bin" check --json "$tmp/two.ein"
if python3 - "$tmp/out" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: --json of a two-tensor chain"; fi
import json, sys
s = json.load(open(sys.argv[1]))["files"][0]["statements"][0]
steps = [(st["kind"], st["tensor"], st["mesh_axes"]) for st in s["steps"]]
assert steps == [("all-gather", "A", [0]), ("all-gather", "B", [0])], steps
assert [o["tensor"] for o in s["operands"]] == ["A", "B", "A", "B"], s["operands"]
assert s["cost"]["comm_bytes_per_device"] == 2 * 0.75 * 64 * 64 * 4, s["cost"]
assert s["collectives"] == ["all-gather(0)", "all-gather(0)"], s["collectives"]
PY

printf 'mesh 4\ndim i=64 j=64 k=64\nA_{i_0 j} B_{j k_0} \\xrightarrow{all-gather} A_{i j} B_{j k}\n' >"$tmp/label.ein"
check "a label naming one tensor's step" 1 "$bin" check "$tmp/label.ein"
both
contains "S302 at the arrow's right side" "$tmp/both" "label.ein:3:46: error: the arrow says all-gather, but this step needs all-gather(0) of A, all-gather(0) of B [S302]"
printf 'mesh 4\ndim i=64 j=64 k=64\nA_{i_0 j} B_{j k_0} \\xrightarrow{all-gather(0), all-gather(0)} A_{i j} B_{j k}\n' >"$tmp/label_ok.ein"
check "a label listing both" 0 "$bin" check "$tmp/label_ok.ein"

printf 'mesh 4\ndim i=8 j=8\nx_{i_0 j} x_{i_0 j} -> x_{ij} x_{ij}\n' >"$tmp/twice.ein"
check "a tensor written twice that changes" 1 "$bin" check "$tmp/twice.ein"
both
contains "S142 positioned" "$tmp/both" "twice.ein:3:24: error: x is a factor twice and changes here"

check "the plan picture" 0 "$bin" render --view plan -o "$tmp/plan.svg" "$tmp/two.ein"
contains "the picture lists A's step" "$tmp/plan.svg" "all-gather(0) of A"
contains "the picture lists B's step" "$tmp/plan.svg" "all-gather(0) of B"
check "the step picture of B" 0 "$bin" render --view steps --step 2 -o "$tmp/step2.svg" "$tmp/two.ein"
contains "step 2 is B's gather" "$tmp/step2.svg" "2. all-gather(0) of B"

printf 'mesh 2x2\ndim i=8 j=4 k=6\nA_{i_0 j} B_{j k_1} -> A_{i j} B_{j k}\nz_{i k} = A_{i j} W_{j k}\n' >"$tmp/run.ein"
check "exec on the simulated mesh" 0 "$bin" exec "$tmp/run.ein"
contains "exec passes" "$tmp/out" "PASS"

check "grad refuses a chain that moves two tensors" 1 "$bin" grad "$tmp/run.ein"
both
contains "G102 positioned" "$tmp/both" "run.ein:3:1: error: this chain moves several tensors, and grad reverses a chain of one [G102]"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
