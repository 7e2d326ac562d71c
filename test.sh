#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, runs every test through ctest,
# runs them again under ASan/UBSan, then fuzzes parser and checker for a bounded time.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/setup.sh
install_packages
# jax (CPU) for the tests that run the exported JAX scripts and compare with XLA, and torch
# for those that run the exported torch scripts and DTensor (on the CPU, with gloo): venvs,
# made once (torch: about 5 GB of wheels, a minute here).
ensure_jax >/dev/null || say "jax is not available: the exported-JAX test will say why"
ensure_torch >/dev/null || say "torch is not available: the torch and DTensor tests will say why"
build build -DSHARDSCOPE_WERROR=ON

say "running tests"
ctest --test-dir build --output-on-failure -j "$(nproc)"

# The same tests again under AddressSanitizer and UndefinedBehaviorSanitizer (clang), in the
# build that also holds the fuzz target, with the GPU backends built against the host CUDA
# emulator (tests/cuda_emu) so that the GPU tests run too; then fuzz the parser and checker
# for a bounded time (FUZZ_SECONDS, default 60; 0 skips both).
fuzz_seconds=${FUZZ_SECONDS:-60}
if [ "$fuzz_seconds" -gt 0 ] && command -v clang++ >/dev/null; then
    emu=OFF
    [ -f /usr/local/cuda/include/cuda_runtime_api.h ] && emu=EMU
    CXX=clang++ build build-fuzz -DSHARDSCOPE_FUZZ=ON -DSHARDSCOPE_WERROR=ON -DSHARDSCOPE_CUDA=$emu \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON
    say "running tests under ASan and UBSan"
    ctest --test-dir build-fuzz --output-on-failure -j "$(nproc)"
    say "fuzzing the parser and checker for ${fuzz_seconds}s"
    corpus=$(mktemp -d)
    trap 'rm -rf "$corpus"' EXIT
    cp samples/*.ein tests/fuzz/regressions/* "$corpus"/
    build-fuzz/tests/fuzz/fuzz_parser "$corpus" -max_total_time="$fuzz_seconds" \
        -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix=build-fuzz/ 2>build-fuzz/fuzz.log ||
        { tail -40 build-fuzz/fuzz.log; say "fuzzing found a failure"; exit 1; }
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" build-fuzz/fuzz.log >&2 || true
    say "fuzzing: no crash, hang or round-trip mismatch"
    diff_seed=${DIFF_SEED:-2026}; say "differential testing (random programs: check, then exec) for ${fuzz_seconds}s, seed $diff_seed"
    SHARDSCOPE_DIFF_SECONDS=$fuzz_seconds SHARDSCOPE_DIFF_PROGRAMS=100000000 SHARDSCOPE_DIFF_SEED=$diff_seed build-fuzz/tests/test_diff -tc="diff: random*" ||
        { say "a program check accepts failed exec (DIFF_SEED=$diff_seed reproduces it)"; exit 1; }
fi
