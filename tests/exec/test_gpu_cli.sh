#!/usr/bin/env bash
# The GPU backends on the command line, on any machine: --backend cuda and nccl run where a GPU
# is usable and otherwise exit 2 saying why; nccl outside mpirun, a bad backend and the REPL's
# :exec --backend nccl are refused with the way to run them.
# Usage: test_gpu_cli.sh SHARDSCOPE_BINARY REPO_ROOT ON|OFF|EMU (built with CUDA, or against the
# tests' host emulator: then the GPU is emulated, and so are a missing driver, no device, a
# full GPU, too few GPUs for nccl and a failing NCCL, each of which must exit 2 saying why).
set -u
bin=$1 cuda=${3:-OFF}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
# shellcheck source=../cli/checks.sh
source "$(dirname "$0")/../cli/checks.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
printf 'mesh 2\ndim i=4 k=6 j=4\nz_{ij} = x_{i k_0} y_{k_0 j}\n' >"$tmp/mm.ein"

# Whether a GPU is usable, asked of the driver, not of shardscope.
gpu=0 emu=0
if [ "$cuda" = EMU ]; then
    gpu=1 emu=1 cuda=ON
elif command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    gpu=1
fi
# --version says which GPU backends were built, and whether on the emulator.
check "version" 0 "$bin" --version
if [ "$emu" = 1 ]; then
    contains "version: emulated GPU backends" "$tmp/out" "GPU backends: cuda, nccl on the tests' host emulator)"
elif [ "$cuda" = ON ]; then
    contains "version: GPU backends" "$tmp/out" "GPU backends: cuda"
    if grep -q emulator "$tmp/out"; then failed=$((failed + 1)); echo "FAIL: a real build says emulator"; else passed=$((passed + 1)); fi
else
    contains "version: no GPU backends" "$tmp/out" "GPU backends: none)"
fi
if [ "$gpu" = 1 ] && [ "$cuda" = ON ]; then
    check "exec --backend cuda runs on the GPU" 0 "$bin" exec --backend cuda --data arange "$tmp/mm.ein"
    contains "cuda report" "$tmp/out" "on cuda"
    if [ "$emu" = 1 ]; then
        contains "cuda report: on the emulator" "$tmp/out" "on cuda (the tests' host emulator of CUDA)"
    fi
    contains "cuda: GPU time by CUDA events" "$tmp/out" "  local compute on the GPU: "
    # A statement that only redistributes says so, instead of timing 0 ms of compute.
    printf 'mesh 2\ndim i=4 j=4\ny_{ij} = x_{i_0 j}\n' >"$tmp/gather.ein"
    check "exec --backend cuda, a statement that only moves data" 0 \
        "$bin" exec --backend cuda --data arange "$tmp/gather.ein"
    contains "cuda: no compute said" "$tmp/out" "no local compute on the GPU: the statement only moves data"
    if grep -q "local compute on the GPU: [0-9]" "$tmp/out"; then
        failed=$((failed + 1))
        echo "FAIL: a statement without compute timed as GPU compute"
    else passed=$((passed + 1)); fi
else
    check "exec --backend cuda without a GPU" 2 "$bin" exec --backend cuda "$tmp/mm.ein"
    contains "cuda: says why" "$tmp/err" "--backend cuda needs an NVIDIA GPU"
    contains "cuda: suggests sim" "$tmp/err" "--backend sim"
    check "exec --backend cuda --json without a GPU" 2 "$bin" exec --backend cuda --json "$tmp/mm.ein"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert not d["ran"] and "--backend cuda needs an NVIDIA GPU" in d["error"], d' "$tmp/out" &&
        passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: cuda --json without a GPU: no JSON"; }
    if [ "$cuda" = ON ]; then
        contains "cuda: the driver's reason" "$tmp/err" "no usable NVIDIA GPU"
    else
        contains "cuda: the build's reason" "$tmp/err" "built without CUDA"
    fi
fi
check "exec --backend nccl without mpirun" 2 "$bin" exec --backend nccl "$tmp/mm.ein"
if ! grep -q "built without" "$tmp/err"; then
    contains "nccl: mpirun hint" "$tmp/err" "mpirun -np N shardscope exec --backend nccl"
fi
if [ "$gpu" = 0 ] && command -v mpirun >/dev/null && ! grep -q "built without" "$tmp/err"; then
    check "exec --backend nccl under mpirun without a GPU" 2 \
        mpirun --oversubscribe -np 2 "$bin" exec --backend nccl "$tmp/mm.ein"
    contains "nccl: says why" "$tmp/err" "needs an NVIDIA GPU"
fi
if [ "$emu" = 1 ]; then
    e=(env SHARDSCOPE_CUDA_EMU_DEVICES=0)
    check "emu: cuda without a device" 2 "${e[@]}" "$bin" exec --backend cuda "$tmp/mm.ein"
    contains "emu: no device: the driver's reason" "$tmp/err" "no CUDA-capable device is detected"
    contains "emu: no device: suggests sim" "$tmp/err" "--backend sim"
    check "emu: nccl under mpirun without a device" 2 \
        "${e[@]}" mpirun --oversubscribe -np 2 "$bin" exec --backend nccl "$tmp/mm.ein"
    contains "emu: nccl without a device says why" "$tmp/err" "needs an NVIDIA GPU"
    e=(env SHARDSCOPE_CUDA_EMU_DRIVER=missing)
    check "emu: cuda without a driver" 2 "${e[@]}" "$bin" exec --backend cuda "$tmp/mm.ein"
    contains "emu: no driver: says so" "$tmp/err" "driver version is insufficient"
    e=(env SHARDSCOPE_CUDA_EMU_MEMORY=256)
    check "emu: cuda on a GPU too small" 2 "${e[@]}" "$bin" exec --backend cuda "$tmp/mm.ein"
    contains "emu: out of memory says what to do" "$tmp/err" "out of device memory: declare smaller ranges"
    check "emu: --json on a GPU too small" 2 "${e[@]}" "$bin" exec --backend cuda --json "$tmp/mm.ein"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert not d["passed"] and "out of device memory" in d["error"], d' "$tmp/out" &&
        passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: emu: --json says why in JSON"; }
    e=(env SHARDSCOPE_CUDA_EMU_DEVICES=1)
    check "emu: nccl with 2 ranks on 1 GPU" 2 \
        "${e[@]}" mpirun --oversubscribe -np 2 "$bin" exec --backend nccl "$tmp/mm.ein"
    contains "emu: too few GPUs: suggests cuda" "$tmp/err" "use --backend cuda"
    e=(env SHARDSCOPE_CUDA_EMU_DEVICES=2)
    check "emu: nccl on 2 GPUs" 0 "${e[@]}" mpirun --oversubscribe -np 2 "$bin" exec --backend nccl "$tmp/mm.ein"
    contains "emu: nccl verifies" "$tmp/out" "1 of 1 statements verified"
    # A launcher that gives each process a GPU of its own (CUDA_VISIBLE_DEVICES per rank):
    # each sees one GPU, and they are different ones.
    own_gpu=(sh -c 'CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK exec "$0" "$@"')
    check "emu: nccl with a GPU per process (CUDA_VISIBLE_DEVICES)" 0 "${e[@]}" \
        mpirun --oversubscribe -np 2 "${own_gpu[@]}" "$bin" exec --backend nccl "$tmp/mm.ein"
    contains "emu: nccl with a GPU per process verifies" "$tmp/out" "1 of 1 statements verified"
    # ... and one that gives both the same GPU: refused as NCCL would, before NCCL is asked.
    check "emu: nccl with two processes given one GPU" 2 "${e[@]}" CUDA_VISIBLE_DEVICES=1 \
        mpirun --oversubscribe -np 2 "$bin" exec --backend nccl "$tmp/mm.ein"
    contains "emu: one GPU for two: suggests cuda" "$tmp/err" "has 1 GPU for 2 ranks: use --backend cuda"
    # A NCCL failure on one rank: every process ends (mpirun stops the rest), none hangs. At
    # stall:1, rank 1's all-reduce never completes and NCCL reports an asynchronous error.
    for where in init:1 allreduce:0 stall:1; do
        check "emu: NCCL failing at $where" 2 timeout 120 "${e[@]}" \
            SHARDSCOPE_CUDA_EMU_NCCL_FAIL=$where mpirun --oversubscribe -np 2 "$bin" exec \
            --backend nccl "$tmp/mm.ein"
        contains "emu: NCCL failing at $where says so" "$tmp/err" "shardscope: error: NCCL"
    done
fi
check "exec --backend bogus" 2 "$bin" exec --backend bogus "$tmp/mm.ein"
printf 'x_{i} = a_{i}\n:exec --backend nccl\n' >"$tmp/repl.in"
check "repl :exec --backend nccl (an error answer: exit 1)" 1 "$bin" repl <"$tmp/repl.in"
contains "repl: nccl hint" "$tmp/out" "--backend nccl needs one process per rank"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
