#!/usr/bin/env bash
# Golden exports: test_golden.sh SHARDSCOPE SOURCE_DIR [--update]
# `shardscope export --to torch|jax|latex` of two samples must equal tests/export/golden/;
# --update rewrites the goldens (review the diff). The Python exports of every sample and of
# tests/export/*.ein compile.
set -uo pipefail
bin=$1 src=$2 update=${3:-}
cd "$src" || exit 2
failed=0 count=0
for s in megatron_mlp fsdp_tp; do
    for to in torch jax latex; do
        ext=$([ "$to" = latex ] && echo tex || echo "$to.py")
        golden=tests/export/golden/$s.$ext
        count=$((count + 1))
        out=$("$bin" export --to "$to" "samples/$s.ein") || { echo "FAIL: export $to $s"; failed=$((failed + 1)); continue; }
        if [ "$update" = --update ]; then
            printf '%s\n' "$out" >"$golden"
            echo "updated: $golden"
        elif ! diff -u "$golden" <(printf '%s\n' "$out"); then
            echo "FAIL: $golden differs (run tests/export/test_golden.sh BIN . --update after review)"
            failed=$((failed + 1))
        fi
    done
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in samples/*.ein tests/export/*.ein; do
    for to in torch jax; do
        count=$((count + 1))
        if ! "$bin" export --to "$to" "$f" -o "$tmp/x.py" || ! python3 -m py_compile "$tmp/x.py"; then
            echo "FAIL: $to export of $f does not compile"
            failed=$((failed + 1))
        fi
    done
done
echo "$((count - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
