#!/usr/bin/env bash
# Instructions per statement, counted by callgrind (repeatable on noisy machines). Runs a
# benchmark at two sizes and reports the per-statement difference, so start-up costs cancel.
#   tests/bench/callgrind.sh [BUILD_DIR] [parse|check|statement] [ARG]
#   parse: parse + canonical print per statement; check: check per statement (parse excluded
#   from the difference only in so far as it is linear: the check bench parses once);
#   statement: parse + check of issue 20's Megatron MLP statement on `mesh dp=4 tp=8`; ARG
#   `distinct`: each statement with tensors of its own (bench_statement.cpp says why).
set -eu
build=${1:-build}
which=${2:-parse}
extra=${3:-}
count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$build/tests/bench/bench_$which" "$1" 1 $extra 2>&1 |
        sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}
small=2000
large=12000
a=$(count $small)
b=$(count $large)
echo "$which: instructions at $small statements: $a, at $large: $b"
echo "$which: instructions per statement: $(( (b - a) / (large - small) ))"
