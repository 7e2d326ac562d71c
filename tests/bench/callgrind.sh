#!/usr/bin/env bash
# Instructions per statement of parse + print, counted by callgrind (repeatable on noisy
# machines). Runs the benchmark at two sizes and reports the per-statement difference, so
# start-up costs cancel out.  Usage: tests/bench/callgrind.sh [BUILD_DIR]
set -eu
build=${1:-build}
count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$build/tests/bench/bench_parse" "$1" 1 2>&1 |
        sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}
small=2000
large=12000
a=$(count $small)
b=$(count $large)
echo "instructions: $small statements: $a, $large statements: $b"
echo "instructions per statement (parse + print): $(( (b - a) / (large - small) ))"
