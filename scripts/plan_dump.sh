#!/usr/bin/env bash
# The behaviour-preservation dump (issue 17): the whole Plan (tests/plandump/plan_dump.cpp:
# `check --format json` without timings, plus every layout field, the data flow and the
# diagnostics, as written, under --strict and at exec --small's sizes) of every input the
# checker is tested on, one file each:
#   samples/*.ein, every .ein under tests/ (diff and fuzz regressions, REPL goldens), every
#   file of tests/fuzz/regressions, and every ```ein block of README.md, docs/*.md and
#   ../shared/NOTATION.md (one program per block, as tests/docs/check_reference.sh reads them).
# Usage: scripts/plan_dump.sh OUTDIR [BUILD_DIR]   (needs the plan_dump target built)
# Dump before a refactoring and after it, then `diff -r BEFORE AFTER` must print nothing.
# The semantics/rules split (branch rules, issue 17): `scripts/plan_dump.sh
# /tmp/plandump-before` on the unchanged code (main at 870a6f0), `scripts/plan_dump.sh
# /tmp/plandump-after` at the end; `diff -r /tmp/plandump-before /tmp/plandump-after` printed
# nothing over the 103 files (23 samples, 18 test programs under tests/, 62 documented
# examples; the fuzz regressions are among the test programs).
set -eu
out=${1:?usage: plan_dump.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
dump=$build/tests/plan_dump
[ -x "$dump" ] || { echo "plan_dump.sh: $dump not built (ninja -C $build plan_dump)" >&2; exit 2; }
mkdir -p "$out"
one() { # NAME FILE: the dump (and its exit status) of FILE as OUTDIR/NAME.json
    local rc=0
    (cd "$root" && "$dump" "$2") > "$out/$1.json" 2>&1 || rc=$?
    [ "$rc" = 0 ] || echo "exit $rc" >> "$out/$1.json"
}
n=0
for f in "$root"/samples/*.ein; do one "samples__$(basename "$f")" "$f"; n=$((n + 1)); done
while IFS= read -r f; do
    rel=${f#"$root"/}
    one "$(echo "$rel" | tr / _)" "$rel"; n=$((n + 1))
done < <(cd "$root" && { find tests -name '*.ein'; find tests/fuzz/regressions -type f; } | sort -u |
         sed "s|^|$root/|")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for doc in "$root"/README.md "$root"/docs/*.md "$root"/../shared/NOTATION.md; do
    [ -f "$doc" ] || continue
    base=$(basename "$doc" .md)
    awk -v dir="$tmp" -v base="$base" '
        !inside && /^```ein/ { inside = 1; ++count; file = sprintf("%s/%s-block-%03d.ein", dir, base, count); printf "" > file; next }
        inside && /^```/ { inside = 0; close(file); next }
        inside { print > file }' "$doc"
done
for f in "$tmp"/*.ein; do
    [ -f "$f" ] || continue
    # The dump names the file it read: give every block the same stable path.
    cp "$f" "$tmp/block.ein"
    one "docs__$(basename "$f")" "$tmp/block.ein"
    sed -i "s|$tmp/block.ein|BLOCK|g" "$out/docs__$(basename "$f").json"
    n=$((n + 1))
done
echo "plan_dump.sh: $n files in $out"
