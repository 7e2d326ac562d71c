#!/usr/bin/env bash
# Scripted REPL sessions against golden outputs: each golden/NAME.in is piped into
# `shardscope repl` (with golden/NAME.args appended to the command line when it exists, where
# $ROOT is the source tree), in an empty working directory and with HOME set to it; stdout,
# stderr and the exit code ("exit N", last line) must equal golden/NAME.out.
# UPDATE=1 rewrites the .out files instead (review the diff).
# Usage: run_golden.sh SHARDSCOPE SOURCE_ROOT
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ROOT=$(cd "$2" && pwd)
export ROOT
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
for input in "$here"/golden/*.in; do
    name=$(basename "$input" .in)
    expected="$here/golden/$name.out"
    args=()
    if [ -f "$here/golden/$name.args" ]; then
        eval "args=($(cat "$here/golden/$name.args"))"
    fi
    rm -rf "$work/run" && mkdir "$work/run"
    actual="$work/$name.out"
    (cd "$work/run" && HOME="$work/run" NO_COLOR= "$bin" repl "${args[@]}" <"$input" >"$actual" 2>&1
     echo "exit $?" >>"$actual")
    # Paths under the source tree are written as $ROOT, so that outputs do not depend on it.
    sed -i "s|$ROOT|\$ROOT|g" "$actual"
    if [ "${UPDATE:-0}" = 1 ]; then
        cp "$actual" "$expected"
        continue
    fi
    if ! diff -u "$expected" "$actual"; then
        echo "FAIL: $name" >&2
        failed=1
    fi
done
exit $failed
