#!/usr/bin/env bash
# The nccl backend under mpirun, on a machine with N GPUs: a program on a mesh of N devices
# verifies and its per-rank tensors (--data arange --show) are those of sim; collectives over a
# group of axes and permutes (a block swap, a ring step) run on 2x(N/2); a mesh of N+1
# devices is refused (exit 2) with the advice to use --backend cuda. Exit 77 (skipped) when
# no GPU is usable. Usage: test_nccl.sh SHARDSCOPE MPIEXEC
set -u
bin=$1 mpiexec=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
n=0
command -v nvidia-smi >/dev/null && n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
# The EMU build (tests/cuda_emu): every process sees the emulated devices.
[ -n "${SHARDSCOPE_CUDA_EMU_DEVICES:-}" ] && n=$SHARDSCOPE_CUDA_EMU_DEVICES
if [ "$n" -eq 0 ]; then echo "SKIPPED: no NVIDIA GPU (nvidia-smi -L lists none)"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
program() { # program DEVICES FILE
    printf 'mesh %s\ndim i=8 k=12 j=8\nz_{ij} = x_{i k_0} y_{k_0 j}\nw_{i_0 j} = softmax_j(z_{i_0 j})\n' "$1" >"$2"
}
program "$n" "$tmp/fit.ein"
if ! timeout 300 "$mpiexec" --oversubscribe -np "$n" "$bin" exec --backend nccl "$tmp/fit.ein" >"$tmp/out" 2>&1; then
    echo "FAIL: nccl on $n ranks:"; cat "$tmp/out"; failed=$((failed + 1))
fi
# shellcheck source=same_lines.sh
source "$(dirname "$0")/same_lines.sh"
a=$("$bin" exec --data arange --dtype f64 --show z "$tmp/fit.ein" 2>&1 | same_lines)
b=$(timeout 300 "$mpiexec" --oversubscribe -np "$n" "$bin" exec --backend nccl --data arange --dtype f64 --show z "$tmp/fit.ein" 2>&1 | same_lines)
if [ "$a" != "$b" ]; then echo "FAIL: nccl --show z differs from sim"; diff <(echo "$a") <(echo "$b") | head; failed=$((failed + 1)); fi
# Collectives over a group of two mesh axes (one communicator split per group on first use):
# on ideal links the planner takes one all-reduce and one all-to-all over the whole group.
if [ "$n" -ge 4 ] && [ $((n % 2)) -eq 0 ]; then
    printf 'mesh 2x%s\nlink 0 450GB/s 0us\nlink 1 450GB/s 0us\ndim i=16 j=16 k=8\nC_{ik} = A_{i j_{01}} B_{j_{01} k}\nexpect all-reduce(0,1)\nx_{i_{01} j} -> x_{i j_{01}}\nexpect all-to-all(0,1)\n' \
        "$((n / 2))" >"$tmp/group.ein"
    if ! timeout 300 "$mpiexec" --oversubscribe -np "$n" "$bin" exec --backend nccl "$tmp/group.ein" >"$tmp/out" 2>&1 ||
        ! grep -q "ran: all-reduce(0,1)" "$tmp/out" || ! grep -q "ran: all-to-all(0,1)" "$tmp/out"; then
        echo "FAIL: nccl collectives over a group of axes on $n ranks:"; cat "$tmp/out"; failed=$((failed + 1))
    fi
fi
# Permutes as grouped ncclSend/ncclRecv: a block swap (on 2x2 one partner each; on 2xM, M > 2,
# each new block in parts from two devices) and a ring step written as Permute_{i_k}.
if [ "$n" -ge 4 ] && [ $((n % 2)) -eq 0 ]; then
    printf 'mesh 2x%s\ndim i=16 j=12 k=8\nx_{i_0 j_1} -> x_{i_1 j_0}\nexpect permute(0,1)\ny_{i_{01} k} = Permute_{i_{01}}(w_{i_{01} k})\nexpect permute(0,1)\n' \
        "$((n / 2))" >"$tmp/permute.ein"
    if ! timeout 300 "$mpiexec" --oversubscribe -np "$n" "$bin" exec --backend nccl "$tmp/permute.ein" >"$tmp/out" 2>&1 ||
        [ "$(grep -c "ran: permute(0,1)" "$tmp/out")" -ne 2 ]; then
        echo "FAIL: nccl permutes on $n ranks:"; cat "$tmp/out"; failed=$((failed + 1))
    fi
fi
program "$((n + 1))" "$tmp/over.ein"
timeout 300 "$mpiexec" --oversubscribe -np "$((n + 1))" "$bin" exec --backend nccl "$tmp/over.ein" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "use --backend cuda" "$tmp/out"; then
    echo "FAIL: $((n + 1)) ranks on $n GPUs: exit $rc (wanted 2 and the advice to use cuda):"
    cat "$tmp/out"; failed=$((failed + 1))
fi
echo "nccl: $n GPU(s), $failed failures"
[ "$failed" -eq 0 ]
