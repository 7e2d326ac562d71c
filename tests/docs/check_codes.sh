#!/usr/bin/env bash
# Every diagnostic code raised in the sources is documented in docs/reference.md, and every
# code the reference documents is still raised somewhere (no stale rows).
# With the shardscope binary, also: the code table (parser/diagnostic_codes.hpp, printed by
# `shardscope codes --markdown`) lists exactly the codes of the sources, and each of its rows
# appears in the reference word for word.
# Usage: check_codes.sh REPO_ROOT [REFERENCE.md] [SHARDSCOPE_BINARY]
# Codes in the sources: the enumerators `Code::P100` (parser/errors.hpp and diagnostics made in
# code) and the string literals "S201", "G202" still made as strings, under parser/ semantics/
# frontend/ exec/ render/ codegen/ app/ (not the table itself, diagnostic_codes.*).
# Codes in the reference: `P100`-style code spans.
# shellcheck disable=SC2016,SC2086 # backticks are literal; the code lists print on one line
set -u
root=$1
ref=${2:-$root/docs/reference.md}
bin=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && grep -rhoE --exclude='diagnostic_codes.*' '"[PSG][0-9]{3}[|"]|Code::[PSG][0-9]{3}\b' \
    parser semantics frontend exec render codegen app) |
    sed -E 's/^Code:://' | tr -d '"|' | sort -u >"$tmp/sources"
grep -oE '`[PSG][0-9]{3}`' "$ref" | tr -d '`' | sort -u >"$tmp/documented"
if [ "$(wc -l <"$tmp/sources")" -lt 100 ]; then
    echo "FAIL: only $(wc -l <"$tmp/sources") codes found in the sources of $root: is it the repository?"
    exit 1
fi
missing=$(comm -23 "$tmp/sources" "$tmp/documented")
stale=$(comm -13 "$tmp/sources" "$tmp/documented")
rc=0
if [ -n "$missing" ]; then
    echo "FAIL: codes raised in the sources but not documented in $ref:" $missing # one line
    rc=1
fi
if [ -n "$stale" ]; then
    echo "FAIL: codes documented in $ref but raised nowhere in the sources:" $stale # one line
    rc=1
fi
if [ -n "$bin" ]; then
    if ! "$bin" codes --markdown >"$tmp/table.md"; then
        echo "FAIL: $bin codes --markdown failed"
        exit 1
    fi
    grep -oE '^\| `[PSG][0-9]{3}`' "$tmp/table.md" | tr -d '|` ' | sort -u >"$tmp/table"
    untabled=$(comm -23 "$tmp/sources" "$tmp/table")
    unraised=$(comm -13 "$tmp/sources" "$tmp/table")
    if [ -n "$untabled" ]; then
        echo "FAIL: codes raised in the sources but missing from parser/diagnostic_codes.hpp:" $untabled
        rc=1
    fi
    if [ -n "$unraised" ]; then
        echo "FAIL: codes in parser/diagnostic_codes.hpp raised nowhere in the sources:" $unraised
        rc=1
    fi
    while IFS= read -r row; do
        case "$row" in '| `'*) ;; *) continue ;; esac
        if ! grep -qxF -- "$row" "$ref"; then
            echo "FAIL: the reference's row differs from the code table's: $row"
            rc=1
        fi
    done <"$tmp/table.md"
fi
echo "$(wc -l <"$tmp/sources") codes in the sources, $(wc -l <"$tmp/documented") documented"
exit $rc
