#!/usr/bin/env bash
# check_reference.sh against small documents: a true one passes; a wrong expectation, an
# error block that checks, an error block failing with another code, a warning block that
# does not warn, a transcript showing other output and an unclosed fence each make it fail
# (so docs_reference can fail); and
# check_codes.sh fails on a reference that lacks a code or lists one raised nowhere.
# Usage: test_check_reference.sh SHARDSCOPE_BINARY
# shellcheck disable=SC2016 # the backticks are Markdown, not expansions
set -u
bin=$1
script="$(dirname "$0")/check_reference.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
expect_rc() { # expect_rc NAME WANT DOC
    "$script" "$bin" "$3" >"$tmp/out" 2>&1
    local rc=$?
    if [ "$rc" -eq "$2" ]; then passed=$((passed + 1)); else
        failed=$((failed + 1))
        echo "FAIL: $1: exit $rc, wanted $2"
        sed 's/^/    /' "$tmp/out" | head -20
    fi
}
f='```'
good() {
    printf '# A reference\n\nProse.\n\n%sein\nmesh 4\ndim e=256\nz = x_{r_0 e} y_{r_0 e}\nexpect all-reduce(0)\n%s\n\n' "$f" "$f"
    printf '%sein-error S102\nmesh 4\nz = x_{r_{tp} e}\n%s\n\n' "$f" "$f"
    printf '%sein-warning S500\nmesh 4\ndim i=10\ny_{i_0} = x_{i_0}\n%s\n\n' "$f" "$f"
    printf '%stext\nnot notation = at all (\n%s\n' "$f" "$f"
}
good >"$tmp/good.md"
expect_rc "a true reference" 0 "$tmp/good.md"
if grep -q '3 blocks hold, 0 fail' "$tmp/out"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: the three blocks are counted"; cat "$tmp/out"; fi

{ good; printf '%sein\nmesh 4\ndim e=256\nz = x_{r_0 e} y_{r_0 e}\nexpect none\n%s\n' "$f" "$f"; } >"$tmp/expect.md"
expect_rc "a wrong expectation" 1 "$tmp/expect.md"
if grep -q 'expect.md:26:' "$tmp/out"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: the failing block is reported at its line"; cat "$tmp/out"; fi

{ good; printf '%sein-error S102\nmesh 4\nz = x_{r_0 e}\n%s\n' "$f" "$f"; } >"$tmp/noerror.md"
expect_rc "an error block that checks" 1 "$tmp/noerror.md"

{ good; printf '%sein-error S101\nmesh 4\nz = x_{r_{tp} e}\n%s\n' "$f" "$f"; } >"$tmp/othercode.md"
expect_rc "an error block with another code" 1 "$tmp/othercode.md"

{ good; printf '%sein-warning S500\nmesh 4\ndim i=8\ny_{i_0} = x_{i_0}\n%s\n' "$f" "$f"; } >"$tmp/nowarn.md"
expect_rc "a warning block that does not warn" 1 "$tmp/nowarn.md"

{ good; printf '%sein\nmesh 4\ndim i=10\ny_{i_0} = x_{i_0}\n%s\n' "$f" "$f"; } >"$tmp/warns.md"
expect_rc "an ein block that warns" 1 "$tmp/warns.md"

{ good; printf '%sein-error\nmesh 4\nz = x_{r_{tp} e}\n%s\n' "$f" "$f"; } >"$tmp/nocode.md"
expect_rc "an error block without a code" 1 "$tmp/nocode.md"

{ good; printf '%sein\nmesh 4\n' "$f"; } >"$tmp/unclosed.md"
expect_rc "an unclosed fence" 1 "$tmp/unclosed.md"

strict() { printf '%sein-error S212%s\nmesh 4\ndim b=8 t=16 c=64 d=64\nu_{b t_0 d} = W_{r_0 c d} a_{b t_0 r c}\n%s\n' "$f" "$1" "$f"; }
strict ' --strict' >"$tmp/strict.md"
expect_rc "options after the code reach check" 0 "$tmp/strict.md"
strict '' >"$tmp/nostrict.md"
expect_rc "without the option the block checks, so it fails" 1 "$tmp/nostrict.md"

# Transcripts: the output shown must be what the command prints; a .ein file no cat made is
# the ein block before.
transcript() { # transcript FIRST_OUTPUT_LINE
    printf '%sein\nmesh 4\ndim e=256\nz = x_{r_0 e} y_{r_0 e}\nexpect all-reduce(0)\n%s\n\n' "$f" "$f"
    printf '%stext\n$ shardscope check -q z.ein\n%s\n%s\n\n' "$f" "$1" "$f"
    printf '%stext\n$ cat bad.ein\nmesh 4\ny = foo(x)\n$ shardscope check -q bad.ein\n' "$f"
    printf "bad.ein:2:5: error: unknown function 'foo' [P108]\n    y = foo(x)\n        ^~~\n"
    printf "    fix: declare it with 'fn foo elementwise' (or linear), or write 'foo * (...)' for a product\n"
    printf '1 file, 0 statements: 1 error, 0 warnings\n%s\n' "$f"
}
transcript '1 file, 1 statement: 0 errors, 0 warnings' >"$tmp/transcript.md"
expect_rc "transcripts that hold" 0 "$tmp/transcript.md"
transcript '1 file, 2 statements: 0 errors, 0 warnings' >"$tmp/transcript2.md"
expect_rc "a transcript that shows another output" 1 "$tmp/transcript2.md"
if grep -q "transcript2.md:8: the \`\`\`text block does not show" "$tmp/out"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: the transcript is reported at its line"; cat "$tmp/out"; fi

printf '# Nothing to check\n' >"$tmp/empty.md"
expect_rc "a document without ein blocks" 1 "$tmp/empty.md"

# check_codes.sh: a reference without one code's row, and one with a code raised nowhere, fail.
root="$(cd "$(dirname "$0")/../.." && pwd)"
codes() { # codes NAME WANT REFERENCE
    "$(dirname "$0")/check_codes.sh" "$root" "$3" "$bin" >"$tmp/out" 2>&1
    local rc=$?
    if [ "$rc" -eq "$2" ]; then passed=$((passed + 1)); else
        failed=$((failed + 1))
        echo "FAIL: $1: exit $rc, wanted $2"
        sed 's/^/    /' "$tmp/out" | head -20
    fi
}
codes "the reference documents every code" 0 "$root/docs/reference.md"
grep -v '^| `S301`' "$root/docs/reference.md" | sed 's/`S301`/S301/g' >"$tmp/missing.md"
codes "a code left out" 1 "$tmp/missing.md"
{ cat "$root/docs/reference.md"; printf '| `S998` | raised nowhere |\n'; } >"$tmp/stale.md"
codes "a code raised nowhere" 1 "$tmp/stale.md"
sed 's/^| `S106` | .*/| `S106` | something else |/' "$root/docs/reference.md" >"$tmp/reworded.md"
codes "a row reworded away from the code table" 1 "$tmp/reworded.md"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
