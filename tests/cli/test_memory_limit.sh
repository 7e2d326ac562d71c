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
# About 48 MB is the least that starts (the libraries, and mimalloc's first 32 MiB segment).
for limit in 60000 150000 400000 1000000; do
    run "--version" "$limit" ok "$bin" --version
    run "check" "$limit" ok "$bin" check "$sample"
done
# Below that: a failed allocation says "out of memory" (with mimalloc), then, too small to map
# the libraries, the loader says so (exit 127).
run "--version, limit too small" 30000 either "$bin" --version
run "--version, limit too small to load" 5000 fail "$bin" --version

# exec loads OpenBLAS (a 128 MiB buffer per thread calling GEMM, here one per rank): a clear
# error where it does not fit, exit 2.
run "exec, no room for OpenBLAS" 150000 fail "$bin" exec "$sample"
if ! grep -q "out of memory: OpenBLAS needs" "$tmp/err"; then
    echo "FAIL: exec under ulimit -v 150000 does not say 'out of memory: OpenBLAS needs'"
    failed=$((failed + 1))
fi
run "exec" 1000000 ok "$bin" exec "$sample"
# At the edge (about 425 MB here), where a rank's first GEMM once looped in OpenBLAS when the
# other rank's allocations had taken its buffer's room: works or says why, both fine.
for limit in 405000 415000 425000 435000 445000 700000; do
    run "exec near the edge" "$limit" either "$bin" exec "$sample"
    run "exec near the edge, 4 ranks" "$limit" either "$bin" exec "$root/samples/placements_2x2.ein"
done

# Inputs too large for the limit: std::bad_alloc ends in a message (exit 2), not abort().
truncate -s 100M "$tmp/nul100.ein"
run "check, 100 MB of NUL bytes" 150000 fail "$bin" check "$tmp/nul100.ein"
truncate -s 300M "$tmp/nul300.ein"
run "check, 300 MB of NUL bytes" 1000000 either "$bin" check "$tmp/nul300.ein"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
