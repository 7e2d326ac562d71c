#!/usr/bin/env bash
# Verify runs whatever check accepts (issue 16): every program of the test corpus (the
# samples, the differential and fuzz regressions) that `check` accepts must verify with
# `exec --small`. Usage: run_corpus.sh SHARDSCOPE SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
accepted=0 failed=0
for f in "$src"/samples/*.ein "$src"/tests/diff/regressions/* "$src"/tests/fuzz/regressions/*; do
    [ -f "$f" ] || continue
    timeout 60 "$bin" check -q "$f" >/dev/null 2>&1 || continue
    accepted=$((accepted + 1))
    if ! out=$(timeout 300 "$bin" exec --small "$f" 2>&1); then
        echo "FAIL: check accepts $f but exec --small does not verify it:"; echo "$out" | tail -15
        failed=$((failed + 1))
    fi
done
echo "$accepted programs check accepts, $failed that exec --small does not verify"
[ "$accepted" -gt 10 ] && [ "$failed" -eq 0 ]
