#!/usr/bin/env bash
# `shardscope plan` end to end: help, usage errors, input errors, the table, --top, --json.
# Usage: test_plan.sh SHARDSCOPE_BINARY REPO_ROOT
set -u
bin=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# shellcheck source=checks.sh
source "$(dirname "$0")/checks.sh"
sample="$root/samples/strategy_search.ein"

check "plan --help" 0 "$bin" plan --help
contains "help names --devices" "$tmp/out" "--devices"
contains "help names --hbm" "$tmp/out" "--hbm"
check "top-level help lists plan" 0 "$bin" --help
contains "plan in the command list" "$tmp/out" "plan"

check "devices are required" 2 "$bin" plan "$sample"
check "bad devices" 2 "$bin" plan "$sample" --devices 12x
contains "bad devices message" "$tmp/err" "bad --devices '12x'"
check "zero devices" 2 "$bin" plan "$sample" --devices 0
check "too many devices" 2 "$bin" plan "$sample" --devices 99999999
check "bad hbm" 2 "$bin" plan "$sample" --devices 8 --hbm lots
contains "bad hbm message" "$tmp/err" "bad --hbm 'lots'"
check "unknown preset" 2 "$bin" plan "$sample" --devices 8 --hw z80
contains "unknown preset message" "$tmp/err" "unknown hardware preset 'z80'"
check "unknown axis" 2 "$bin" plan "$sample" --devices 8 --axes dp,ep
contains "unknown axis message" "$tmp/err" "--axes names 'ep', which the mesh does not declare"
check "missing file" 2 "$bin" plan "$tmp/nope.ein" --devices 8
check "an axis named twice" 2 "$bin" plan "$sample" --devices 8 --axes dp,dp
contains "an axis named twice: says so" "$tmp/err" "--axes 'dp,dp' names dp twice: name each axis once"
check "--axes naming no axis" 2 "$bin" plan "$sample" --devices 8 --axes ''
contains "--axes '': says so" "$tmp/err" "--axes '' names no axis"

printf 'dim i=8\ny = x_{i} z_{i}\n' >"$tmp/nomesh.ein"
check "no mesh axes" 1 "$bin" plan "$tmp/nomesh.ein" --devices 8
contains "no mesh axes message" "$tmp/err" "nomesh.ein: error: the program declares no mesh axes to size"
printf 'mesh dp=1\nz = x_{r_0 e} y_{r_0 e\n' >"$tmp/syntax.ein"
check "parse errors" 1 "$bin" plan "$tmp/syntax.ein" --devices 8
contains "parse error positioned" "$tmp/err" "syntax.ein:2:"
printf 'mesh tp=1\ndim f=6 d=4\ny_{f_{tp}} = W_{f_{tp} d} x_{d}\n' >"$tmp/uneven.ein"
check "every mesh pruned" 1 "$bin" plan "$tmp/uneven.ein" --devices 4
contains "says why" "$tmp/out" "f=6 does not divide by tp = 4"
contains "no factorization divides" "$tmp/err" "no factorization of 4 devices over tp divides the ranges sharded over them"
# 17 open dimensions of two choices each: 131072 assignments, more than the search enumerates.
{
    printf 'mesh tp=1\ndim b=8 f=8\n'
    for k in $(seq 1 17); do printf 'y%s_{b f_{tp?}} = x%s_{b f}\n' "$k" "$k"; done
} >"$tmp/many_open.ein"
check "too many open assignments" 1 "$bin" plan "$tmp/many_open.ein" --devices 2
contains "too many open assignments message" "$tmp/err" "the open dimensions allow more than 65536 assignments per mesh"
check "every mesh pruned for memory" 1 "$bin" plan "$sample" --devices 8 --hbm 1kB
contains "no mesh left" "$tmp/err" "no mesh of 8 devices is left: every one was pruned"
contains "memory reason" "$tmp/out" "more than 1 kB"

check "plan of the sample" 0 "$bin" plan "$sample" --devices 64 --hbm 80GB
contains "summary line" "$tmp/out" "64 devices over dp, fsdp, tp: 28 meshes"
contains "side by side" "$tmp/out" "#1"
contains "third column" "$tmp/out" "#3"
contains "why it loses" "$tmp/out" "#2 loses to #1: +"
check "plan --top 1" 0 "$bin" plan "$sample" --devices 64 --top 1
if grep -q "#2" "$tmp/out"; then failed=$((failed + 1)); echo "FAIL: --top 1 shows #2"; else passed=$((passed + 1)); fi
check "plan --axes" 0 "$bin" plan "$sample" --devices 8 --axes dp,tp
contains "only dp and tp" "$tmp/out" "8 devices over dp, tp: 4 meshes"
check "plan --json" 0 "$bin" plan "$sample" --devices 16 --top 2 --json
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["version"]==1; assert len(d["candidates"])==2; assert d["factorizations"]==15; assert "why" in d["candidates"][1]; assert d["candidates"][0]["time_s"] <= d["candidates"][1]["time_s"]' "$tmp/out"; then
    passed=$((passed + 1))
else
    failed=$((failed + 1)); echo "FAIL: plan --json does not parse or lacks fields"; head -20 "$tmp/out"
fi
check "plan from stdin" 0 "$bin" plan - --devices 4 <"$sample"

# Ctrl-C: the search stops between checks and prints the ranking of what it checked (exit 130).
# Thirty copies of a four-statement layer make the search take ~30 s here, so that the
# interrupt after 1 s lands mid-search even on a machine ten times faster (one copy took
# ~1 s and raced the interrupt). The softmax along s keeps y's plan from slicing h before
# the compute (which made the whole search take 0.4 s).
{
    printf 'mesh dp=1 fsdp=1 tp=1 sp=1 pp=1\ndim b=512 s=4096 d=8192 f=28672\n'
    for i in $(seq 1 30); do
        printf 'A%d_{f_{tp} d} = W%d_{f_{tp} d_{fsdp}}\n' "$i" "$i"
        printf 'h%d_{b_{dp,fsdp} s f_{tp}} = A%d_{f_{tp} d} x%d_{b_{dp,fsdp} s d}\n' "$i" "$i" "$i"
        printf 'y%d_{b_{dp,fsdp} s_{sp} d} = V%d_{d f_{tp}} phi(softmax_s(h%d_{b_{dp,fsdp} s f_{tp}}))\n' "$i" "$i" "$i"
        printf 'z%d_{b_{dp,fsdp} s d} = y%d_{b_{dp,fsdp} s_{sp} d}\n' "$i" "$i"
    done
} >"$tmp/long.ein"
check "interrupted search" 130 timeout --preserve-status -s INT 1 "$bin" plan "$tmp/long.ein" --devices 1024
contains "says it was interrupted" "$tmp/out" "(interrupted: the candidates checked so far)"
contains "stderr says so" "$tmp/err" "shardscope: interrupted after"

# Open shardings (docs/reference.md "Open shardings"): plan chooses them with the sizes, check
# with the written mesh (note S402), exec runs check's choice, fmt keeps the markers.
open_sample="$root/samples/open_shardings.ein"
check "plan with open dimensions" 0 "$bin" plan "$open_sample" --devices 16
contains "open summary" "$tmp/out" "× 12 choices of 3 open dimensions"
contains "a row per open dimension" "$tmp/out" "W^0 f (open)"
contains "the choice of #1" "$tmp/out" "h f (open)        tp"
check "plan --json with open dimensions" 0 "$bin" plan "$open_sample" --devices 16 --json
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [o["key"] for o in d["open_dimensions"]]==["h f","W^0 f","W^1 f"]; assert d["open_assignments"]==12; c=d["candidates"][0]["open"]; assert c["h f"]=="tp" and c["W^0 f"]=="tp"' "$tmp/out"; then
    passed=$((passed + 1))
else
    failed=$((failed + 1)); echo "FAIL: plan --json lacks the open choices"; head -30 "$tmp/out"
fi
check "check resolves open dimensions" 0 "$bin" check "$open_sample"
contains "the note names the choice" "$tmp/err" "h f → tp, W^0 f → tp, W^1 f → tp"
contains "its code" "$tmp/err" "[S402]"
contains "h needs no collective" "$tmp/out" "collectives: none"
contains "z: one all-reduce over tp" "$tmp/out" "collectives: all-reduce(tp)"
check "exec runs the resolved plan" 0 "$bin" exec --small "$open_sample"
check "fmt keeps the markers" 0 "$bin" fmt --check "$open_sample"
printf 'mesh tp=4\ny_{b f_{tp?}} = W_{f d} x_{b d}\nz_{b} = y_{b f_?} u_{f}\n' >"$tmp/conflict.ein"
check "one dimension, two lists of axes" 1 "$bin" plan "$tmp/conflict.ein" --devices 4
contains "P241 at its place" "$tmp/err" "conflict.ein:3:14"
printf 'mesh tp=4\ndim b=4 f=8\ny_{b f_{tq?}} = x_{b f}\n' >"$tmp/unknown_open.ein"
check "an open axis the mesh lacks (check)" 1 "$bin" check "$tmp/unknown_open.ein"
contains "S102 names it" "$tmp/err" "may choose axis 'tq'"
check "an open axis the mesh lacks (plan)" 1 "$bin" plan "$tmp/unknown_open.ein" --devices 4

# docs/guide.md's example is what the tool prints (run from the repository root, as shown).
(cd "$root" && "$bin" plan samples/strategy_search.ein --devices 64 --hbm 8GB) >"$tmp/guide_actual.txt" 2>/dev/null
awk '/^\$ shardscope plan samples\/strategy_search.ein --devices 64 --hbm 8GB$/ {on=1; next} on && /^```/ {exit} on' \
    "$root/docs/guide.md" >"$tmp/guide_shown.txt"
if [ -s "$tmp/guide_shown.txt" ] && cmp -s "$tmp/guide_shown.txt" "$tmp/guide_actual.txt"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: docs/guide.md's plan example differs from the output:"
    diff "$tmp/guide_shown.txt" "$tmp/guide_actual.txt" | head -20; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
