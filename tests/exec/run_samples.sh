#!/usr/bin/env bash
# Every sample runs and verifies: run_samples.sh SHARDSCOPE SAMPLES_DIR sim|mpi|cuda [MPIEXEC]
# sim: random data, then integer data (linear statements compare exactly), at small ranges.
# mpi: one process per device of the sample's mesh, under mpirun --oversubscribe.
# cuda: as sim on virtual ranks on the GPU(s), and with --data arange the per-rank tensors
# of every result (--show) are those of sim; exits 77 (skipped) when no GPU is usable.
set -uo pipefail
bin=$1 dir=$2 backend=$3 mpiexec=${4:-mpirun}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
failed=0 count=0
if [ "$backend" = cuda ]; then
    printf 'mesh 2\ny_{i} = x_{i_0}\n' >"${TMPDIR:-/tmp}/shardscope_probe_$$.ein"
    "$bin" exec --backend cuda --small "${TMPDIR:-/tmp}/shardscope_probe_$$.ein" >/dev/null 2>"${TMPDIR:-/tmp}/shardscope_probe_$$.err"
    rc=$?
    if [ "$rc" -eq 2 ] && grep -q "needs an NVIDIA GPU" "${TMPDIR:-/tmp}/shardscope_probe_$$.err"; then
        echo "SKIPPED: $(cat "${TMPDIR:-/tmp}/shardscope_probe_$$.err")"
        rm -f "${TMPDIR:-/tmp}/shardscope_probe_$$".*
        exit 77
    fi
    rm -f "${TMPDIR:-/tmp}/shardscope_probe_$$".*
fi
# shellcheck source=same_lines.sh
source "$(dirname "$0")/same_lines.sh"
# The "N of M statements verified" line of an exec report (empty without one).
statements_line() { echo "$1" | grep -E '^[0-9]+ of [0-9]+ statements verified$' | tail -1; }
all_verified() {
    local l
    l=$(statements_line "$1")
    [ -n "$l" ] && [ "$(echo "$l" | awk '{print $1}')" = "$(echo "$l" | awk '{print $3}')" ]
}
# A failed run's cause first: what is not a passing statement, with each FAIL's statement.
summarize() {
    echo "--- lines other than passing statements:"
    echo "$1" | grep -v -E '^line [0-9]+: |^  ran: |^  max abs error .*PASS$' | head -60
    echo "--- failing statements:"
    echo "$1" | grep -B2 -E '^  max abs error .*FAIL$' | head -40
    echo "--- last lines:"
    echo "$1" | tail -8
}
# One sample on one process per device: run_mpi FILE RANKS.
run_mpi() { "$mpiexec" --oversubscribe -np "$2" "$bin" exec --backend mpi --small --dtype f64 "$1" 2>&1; }
for f in "$dir"/*.ein; do
    count=$((count + 1))
    if [ "$backend" = cuda ]; then
        for data in random ints; do
            if ! out=$("$bin" exec --backend cuda --small --data "$data" "$f" 2>&1); then
                echo "FAIL (cuda, $data): $f"; summarize "$out"; failed=$((failed + 1))
            fi
        done
        # Every stored result's per-rank tensors, on cuda and on sim, with arange data (a
        # pipelined sample's too: each layer's tensors on every rank, those of its stage's
        # ranks). Not the Megatron samples: on arange data their attention softmax saturates,
        # and its backward (gS, gQ, gK, gA, gW^q, gW^k) is rounding noise that the emulated
        # cuda kernels and sim sum in other orders (listings of the same length; entries that
        # differ are at most 2.6e-7 where the tensor reaches 4e5, or an exact 0 on one side:
        # f64 rounding). Their cuda runs above verify them at their operands' magnitude.
        if [[ $(basename "$f") == megatron_gpt* ]]; then
            echo "ok (cuda; per-rank listing not compared, see the comment): $f"
            continue
        fi
        targets=$("$bin" check --json "$f" | python3 -c '
import json, sys
seen = []
for s in json.load(sys.stdin)["files"][0]["statements"]:
    t = s["result"]["tensor"]
    if t and t not in seen:
        seen.append(t)
print(" ".join(seen))')
        for t in $targets; do
            a=$("$bin" exec --small --data arange --dtype f64 --show "$t" "$f" 2>&1 | same_lines)
            b=$("$bin" exec --backend cuda --small --data arange --dtype f64 --show "$t" "$f" 2>&1 | same_lines)
            if [ "$a" != "$b" ]; then
                echo "FAIL (cuda arange --show $t differs from sim): $f"
                diff <(echo "$a") <(echo "$b") | head -20
                failed=$((failed + 1))
            fi
        done
        echo "ok (cuda): $f"
    elif [ "$backend" = sim ]; then
        datas="random ints"
        for data in $datas; do
            if ! out=$("$bin" exec --small --data "$data" "$f" 2>&1); then
                echo "FAIL ($data): $f"; summarize "$out"; failed=$((failed + 1))
            fi
        done
    else
        n=$("$bin" check --json "$f" | python3 -c '
import json, sys
n = 1
for a in json.load(sys.stdin)["files"][0]["mesh"]:
    n *= a["size"]
print(n)')
        # In f64: MPI reduces in another order than the reference, and over 64 ranks the deep
        # backward of megatron_gpt175b.ein (layer-norm backwards with cancellation) lands at
        # 1.04e-4 in f32, just over exec's f32 tolerance; f64 leaves a wrong collective as the
        # only way to fail. The sim backend runs every sample in f32 (above and test_exec).
        out=$(run_mpi "$f" "$n")
        rc=$?
        # Once (stop 30's CI), megatron_gpt175b.ein on 64 ranks failed with no cause in sight:
        # CI keeps the head of a 1,600-line report. A failure shows its cause first: the exit
        # status, then every line that is not a passing statement (FAIL lines, mpirun's own
        # messages about a rank's exit), then the report's last lines.
        if [ "$rc" -ne 0 ] && all_verified "$out"; then
            # Every statement verified, yet mpirun failed: a rank's exit or the launcher, not a
            # collective. Shown, then run once more: a second failure fails the test.
            echo "WARNING (mpi, $n ranks, exit $rc after every statement verified; run again): $f"
            summarize "$out"
            out=$(run_mpi "$f" "$n")
            rc=$?
        fi
        if [ "$rc" -ne 0 ]; then
            echo "FAIL (mpi, $n ranks, exit $rc): $f"
            summarize "$out"
            failed=$((failed + 1))
        else
            echo "ok (mpi, $n ranks): $f: $(echo "$out" | tail -1)"
        fi
    fi
done
echo "$count samples, $failed failures"
[ "$failed" -eq 0 ] && [ "$count" -gt 0 ]
