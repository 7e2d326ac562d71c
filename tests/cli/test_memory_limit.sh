#!/usr/bin/env bash
# The command line under a virtual-memory limit (ulimit -v, as on clusters): it either works
# (exit 0) or exits non-zero with a message on stderr; never hangs (timeout's 124), never dies
# of a signal (128+N, e.g. 134 for an uncaught std::bad_alloc). OpenBLAS, once linked, started
# its thread pool in every command and spun forever when its 128 MiB buffer could not be mapped.
# Usage: test_memory_limit.sh SHARDSCOPE_BINARY REPO_ROOT SANITIZED(ON|OFF)
# Exit 77 (skipped) in the ASan/UBSan build: ASan reserves terabytes of shadow memory, so no
# ulimit -v that a test could set lets it start.
set -u
bin=$1
root=$2
sanitized=${3:-OFF}
case "$sanitized" in
ON | on | TRUE | true | 1)
    echo "SKIP: sanitizer build (ASan maps terabytes of shadow memory; ulimit -v cannot apply)"
    exit 77
    ;;
esac
if ! (ulimit -v 1000000) 2>/dev/null; then
    echo "SKIP: this shell cannot set ulimit -v"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# run NAME LIMIT_KB EXPECT CMD...: EXPECT is ok (exit 0), fail (non-zero and a message on
# stderr) or either (one of the two).
run() {
    local name=$1 limit=$2 expect=$3
    shift 3
    # shellcheck disable=SC2016 # the inner shell expands them
    timeout -k 5 30 bash -c 'ulimit -v "$1"; shift; exec "$@"' limit "$limit" "$@" \
        >"$tmp/out" 2>"$tmp/err" </dev/null
    local rc=$?
    local why=""
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        why="hung (killed by timeout after 30 s)"
    elif [ "$rc" -ge 128 ]; then
        why="died of signal $((rc - 128))"
    elif [ "$rc" -eq 0 ] && [ "$expect" = fail ]; then
        why="exited 0, expected a failure"
    elif [ "$rc" -ne 0 ] && [ "$expect" = ok ]; then
        why="exited $rc, expected 0"
    elif [ "$rc" -ne 0 ] && [ ! -s "$tmp/err" ]; then
        why="exited $rc without a message on stderr"
    fi
    if [ -n "$why" ]; then
        echo "FAIL: $name (ulimit -v $limit): $why"
        tr -d '\000' <"$tmp/err" | sed 's/^/  stderr: /' | head -5
        failed=$((failed + 1))
    else
        echo "ok: $name (ulimit -v $limit): exit $rc $(head -1 "$tmp/err" | tr -d '\000' | cut -c1-160)"
        passed=$((passed + 1))
    fi
}

sample=$root/samples/dtensor_matmul.ein
# The least limit at which --version starts: the binary's own floor (its libraries, mimalloc's
# first 32 MiB segment), about 48 MB without CUDA and far more with cuBLAS and NCCL linked.
# The limits below are offsets from it, so that they test the same room in either build.
starts() {
    timeout -k 5 30 bash -c 'ulimit -v "$1"; shift; exec "$@"' limit "$1" "$bin" --version \
        >/dev/null 2>&1 </dev/null
}
lo=4000 hi=16000000
if ! starts "$hi"; then
    echo "FAIL: --version does not start under ulimit -v $hi"
    exit 1
fi
while [ $((hi - lo)) -gt 2000 ]; do
    mid=$(((lo + hi) / 2))
    if starts "$mid"; then hi=$mid; else lo=$mid; fi
done
floor=$hi
echo "the binary starts from ulimit -v $floor (KB)"
at() { echo $((floor + $1)); }

for extra in 12000 100000 350000 950000; do
    run "--version" "$(at $extra)" ok "$bin" --version
    run "check" "$(at $extra)" ok "$bin" check "$sample"
done
# Below that: a failed allocation says "out of memory" (with mimalloc), or, too small to map
# the libraries, the loader says so (exit 127).
# (Not where cuBLAS is linked: its own library constructor, before main, dies of SIGSEGV when
# the limit is just below the floor; exec/README lists it.)
if ldd "$bin" 2>/dev/null | grep -q libcublas; then
    echo "not run: --version just below the floor (cuBLAS's constructor crashes there)"
else
    run "--version, limit too small" $((floor - 18000)) either "$bin" --version
fi
run "--version, limit too small to load" 5000 fail "$bin" --version

# exec loads OpenBLAS (a 128 MiB buffer per thread calling GEMM, here one per rank): a clear
# error where it does not fit, exit 2.
run "exec, no room for OpenBLAS" "$(at 100000)" fail "$bin" exec "$sample"
if ! grep -q "out of memory: OpenBLAS needs" "$tmp/err"; then
    echo "FAIL: exec under ulimit -v $(at 100000) does not say 'out of memory: OpenBLAS needs'"
    failed=$((failed + 1))
fi
run "exec" "$(at 950000)" ok "$bin" exec "$sample"
# At the edge (about 380 MB above the floor), where a rank's first GEMM once looped in OpenBLAS
# when the other rank's allocations had taken its buffer's room: works or says why, both fine.
for extra in 357000 367000 377000 387000 397000 652000; do
    run "exec near the edge" "$(at $extra)" either "$bin" exec "$sample"
    run "exec near the edge, 4 ranks" "$(at $extra)" either "$bin" exec "$root/samples/placements_2x2.ein"
done

# Inputs too large for the limit: std::bad_alloc ends in a message (exit 2), not abort().
truncate -s 100M "$tmp/nul100.ein"
run "check, 100 MB of NUL bytes" "$(at 100000)" fail "$bin" check "$tmp/nul100.ein"
if ! grep -q "out of memory" "$tmp/err"; then
    echo "FAIL: check of 100 MB under ulimit -v $(at 100000) does not say 'out of memory'"
    failed=$((failed + 1))
fi
truncate -s 300M "$tmp/nul300.ein"
run "check, 300 MB of NUL bytes" "$(at 950000)" either "$bin" check "$tmp/nul300.ein"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
