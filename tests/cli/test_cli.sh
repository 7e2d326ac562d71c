#!/usr/bin/env bash
# End-to-end checks of the shardscope command line: exit codes, messages, output forms.
# Usage: test_cli.sh SHARDSCOPE_BINARY REPO_ROOT
set -u
bin=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# shellcheck source=checks.sh
source "$(dirname "$0")/checks.sh"

check "help" 0 "$bin" --help
contains "help lists fmt" "$tmp/out" "fmt"
check "version" 0 "$bin" --version
contains "version text" "$tmp/out" "shardscope 0."
# A build that links mimalloc runs on it (the linker kept the library and its malloc won).
contains "version names the allocator" "$tmp/out" "(allocator: ${SHARDSCOPE_EXPECT_ALLOCATOR:-}"
check "no subcommand is a usage error" 2 "$bin"
check "unknown option is a usage error" 2 "$bin" fmt --bogus "$root/samples"
check "missing file" 2 "$bin" fmt "$tmp/nope.ein"
contains "missing file message" "$tmp/err" "no such file: '$tmp/nope.ein'"
printf 'z = x_{k} \xff y\n' >"$tmp/latin1.ein"
check "not utf-8" 2 "$bin" parse "$tmp/latin1.ein"
contains "not utf-8 message" "$tmp/err" "latin1.ein:1:11: error: the file is not valid UTF-8 (byte 0xFF)"
mkdir "$tmp/empty"
check "directory without .ein files" 2 "$bin" fmt "$tmp/empty"
contains "empty directory message" "$tmp/err" "no .ein files"

check "samples are canonical-checkable" 0 "$bin" parse "$root/samples"
check "fmt of all samples" 0 "$bin" fmt "$root/samples"
check "fmt --write of stdin refused" 2 "$bin" fmt --write - <"$root/samples/dtensor_matmul.ein"
contains "fmt --write - says why" "$tmp/err" "--write cannot rewrite standard input"
[ -e ./- ] && { failed=$((failed + 1)); echo "FAIL: fmt --write - created a file named -"; }
# Through a symbolic link, the linked file is rewritten and the link stays a link.
printf 'mesh 2\nz_{i_0} =   x_{i_0}\n' >"$tmp/linked.ein"
ln -s linked.ein "$tmp/link.ein"
check "fmt --write through a symlink" 0 "$bin" fmt --write "$tmp/link.ein"
if [ -L "$tmp/link.ein" ] && grep -q '^z_{i_0} = x_{i_0}$' "$tmp/linked.ein"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: fmt --write replaced the link or left the file unformatted"; fi
# A pipe as the output (as -o /dev/null is a device): written in place, never replaced by a
# file (a rename over /dev/null replaced the device node, 2026-11-27).
mkfifo "$tmp/pipe"
# Generous limits: under a loaded CI machine the reader may wait long for the writer.
timeout 120 cat "$tmp/pipe" >"$tmp/from_pipe" &
reader=$!
check "export -o a FIFO" 0 timeout 60 "$bin" export --to jax "$root/samples/dot_product.ein" -o "$tmp/pipe"
wait "$reader"
if [ -p "$tmp/pipe" ] && grep -q "jax" "$tmp/from_pipe" && ! ls "$tmp"/pipe.* >/dev/null 2>&1; then
    passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: export -o FIFO replaced the pipe or wrote nothing through it"; fi
check "export -o a directory" 2 "$bin" export --to jax "$root/samples/dot_product.ein" -o "$tmp/empty"
# fmt output is itself canonical: formatting it again changes nothing.
for f in "$root"/samples/*.ein; do
    "$bin" fmt "$f" >"$tmp/once.ein" && "$bin" fmt "$tmp/once.ein" >"$tmp/twice.ein"
    if cmp -s "$tmp/once.ein" "$tmp/twice.ein"; then passed=$((passed + 1)); else
        failed=$((failed + 1)); echo "FAIL: fmt not idempotent on $f"; fi
done
cp "$tmp/once.ein" "$tmp/canon.ein"
check "fmt --check on canonical file" 0 "$bin" fmt --check "$tmp/canon.ein"
printf 'z   =  x_{ k }y_{k}\n' >"$tmp/messy.ein"
check "fmt --check on messy file" 1 "$bin" fmt --check "$tmp/messy.ein"
contains "fmt --check names the file" "$tmp/out" "messy.ein: not in canonical form"
check "fmt --write" 0 "$bin" fmt --write "$tmp/messy.ein"
contains "fmt --write rewrote" "$tmp/messy.ein" "z = x_{k} y_{k}"
check "fmt --unicode" 0 "$bin" fmt --unicode - <<<'z_{bsd} = W^1_{d r_0 f} phi(W^0_{r_0 f d'"'"'} x_{bsd'"'"'})'
contains "unicode form" "$tmp/out" "z_{bsd} = W¹_{d r₀ f} φ(W⁰_{r₀ f d′} x_{bsd′})"

printf 'mesh 4\nz = x_{r_0 e} y_{r_0 e\nok = x\nw = foo(x)\n' >"$tmp/bad.ein"
check "errors exit 1" 1 "$bin" parse "$tmp/bad.ein"
contains "positioned error" "$tmp/err" "bad.ein:2:23: error: expected an index or '}'"
contains "second error reported" "$tmp/err" "bad.ein:4:5: error: unknown function 'foo' [P108]"
contains "caret line" "$tmp/err" "        ^~~"
check "fmt refuses a file with errors" 1 "$bin" fmt --write "$tmp/bad.ein"
contains "bad file untouched" "$tmp/bad.ein" "w = foo(x)"

check "parse --json" 1 "$bin" parse --json "$tmp/bad.ein"
python3 - "$tmp/out" <<'PY' && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: json shape"; }
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["version"] == 1
f = doc["files"][0]
assert [d["code"] for d in f["diagnostics"]] == ["P121", "P108"], f["diagnostics"]
kinds = [i["statement"]["type"] for i in f["items"] if i["kind"] == "statement"]
assert kinds == ["mesh", "equation"], kinds
eq = f["items"][1]["statement"]
assert eq["lhs"]["tensor"] == "ok" and eq["rhs"]["kind"] == "tensor"
PY
check "parse --json sample" 0 "$bin" parse --json "$root/samples/megatron_mlp.ein"
python3 - "$tmp/out" <<'PY' && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: json of megatron sample"; }
import json, sys
doc = json.load(open(sys.argv[1]))
def refs(e, out):
    if isinstance(e, dict):
        if e.get("kind") == "tensor": out.append(e)
        for v in e.values(): refs(v, out)
    elif isinstance(e, list):
        for v in e: refs(v, out)
    return out
found = refs(doc, [])
w0 = [t for t in found if t["tensor"] == "W^0"]
assert w0, "W^0 not found"
first = w0[0]["dims"][0]["indices"][0]
assert first["name"] == "r" and first["axes"] == ["0"], first
PY

# ---- check -----------------------------------------------------------------------------
# An endless input ends with a message at the size cap (256 MiB), not with memory exhausted.
check "check of an endless file" 2 timeout 60 "$bin" check /dev/zero
contains "endless file: says why" "$tmp/err" "shardscope: error: '/dev/zero' is larger than 256 MiB"
check "check of an endless stdin" 2 timeout 60 "$bin" check - </dev/zero
contains "endless stdin: says why" "$tmp/err" "'<stdin>' is larger than 256 MiB"
# An empty --mesh is a usage error, as a blank one is (not "no --mesh").
for cmd in check grad "export --to latex" exec; do
    # shellcheck disable=SC2086 # the command and its options are words
    check "$cmd --mesh ''" 2 "$bin" $cmd --mesh '' "$root/samples/megatron_mlp.ein"
    contains "$cmd --mesh '': says why" "$tmp/err" "bad --mesh '': "
    # shellcheck disable=SC2086
    check "$cmd --mesh '  '" 2 "$bin" $cmd --mesh '  ' "$root/samples/megatron_mlp.ein"
    contains "$cmd --mesh '  ': says why" "$tmp/err" "bad --mesh '  ': "
done
# Standard input is <stdin> in plans' headers as in diagnostics, and is read once.
printf 'mesh 4\ndim i=8 k=8\nz_{i} = x_{i k_0} y_{k_0}\nq = foo(x_{i})\n' >"$tmp/stdin.ein"
check "check - with an error" 1 "$bin" check - <"$tmp/stdin.ein"
contains "stdin: the plan's header" "$tmp/out" "<stdin>:3: z_{i} = "
contains "stdin: the diagnostic" "$tmp/err" "<stdin>:4:5: error: unknown function 'foo'"
if grep -q '^-:' "$tmp/out"; then failed=$((failed + 1)); echo "FAIL: stdin named - in a header"; else passed=$((passed + 1)); fi
check "check - - refused" 2 "$bin" check - - <"$tmp/stdin.ein"
contains "check - -: says why" "$tmp/err" "standard input (-) is named more than once"
check "check all samples" 0 "$bin" check "$root/samples"
contains "check summary" "$tmp/err" "0 errors"
contains "check shows placements" "$tmp/out" "(S(1))"
printf 'mesh 4\nz = x_{r_0 e} y_{r_0 e}\nexpect reduce-scatter(0)\n' >"$tmp/wrong.ein"
check "failed expectation exits 1" 1 "$bin" check "$tmp/wrong.ein"
contains "failed expectation message" "$tmp/err" "wrong.ein:3:1: error: expected reduce-scatter(0), but the plan of line 2 has all-reduce(0) [S301]"
check "check --json" 0 "$bin" check --json "$root/samples/megatron_mlp.ein"
python3 - "$tmp/out" <<'PY' && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: check --json schema"; }
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["version"] == 1
f = doc["files"][0]
for key in ["path", "errors", "warnings", "diagnostics", "mesh", "statements"]:
    assert key in f, key
assert f["mesh"] == [{"name": "0", "size": 4}], f["mesh"]
s = f["statements"][0]
for key in ["line", "source", "pretty", "result", "operands", "steps", "collectives", "alternatives", "cost"]:
    assert key in s, key
assert s["collectives"] == ["all-reduce(0)"], s["collectives"]
assert s["result"]["tensor"] == "z" and s["result"]["placements"] == ["R"]
assert set(s["result"]) >= {"tensor", "indices", "placements", "global_shape", "local_shape"}
kinds = {st["kind"] for st in s["steps"]}
assert kinds <= {"compute", "all-reduce", "reduce-scatter", "all-gather", "all-to-all", "permute", "slice", "split"}, kinds
st = [x for x in s["steps"] if x["kind"] == "all-reduce"][0]
assert st["mesh_axes"] == [0] and st["bytes_per_device"] > 0 and st["time_s"] > 0 and st["reason"]
assert set(s["cost"]) == {"flops_per_device", "comm_bytes_per_device", "memory_bytes_per_device", "time_s"}
PY
check "check --json with errors" 1 "$bin" check --json "$tmp/wrong.ein"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); f=d["files"][0]; e=[x for x in f["diagnostics"] if x["severity"]=="error"]; assert f["errors"]==1 and e[0]["code"]=="S301" and e[0]["line"]==3 and e[0]["fix"]' "$tmp/out" &&
    passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: json document on errors"; }
printf 'mesh 2\nz_{b r_0 t d} = W_{d r'"'"'_0 f} x_{b r_0 t f}\n' >"$tmp/rule3.ein"
check "rule 3 is chosen, fine without --strict" 0 "$bin" check "$tmp/rule3.ein"
check "rule 3 is an error with --strict" 1 "$bin" check --strict "$tmp/rule3.ein"
contains "strict message" "$tmp/err" "[S212]"
check "--mesh override" 0 "$bin" check --json --mesh 2x4 "$root/samples/dot_product.ein"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["files"][0]["mesh"]==[{"name":"0","size":2},{"name":"1","size":4}]' "$tmp/out" &&
    passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: --mesh override"; }
check "bad --mesh" 2 "$bin" check --mesh 2y4 "$root/samples/dot_product.ein"
contains "bad --mesh message" "$tmp/err" "bad --mesh '2y4'"
check "too large --mesh" 2 "$bin" check --mesh 8192x8192x2 "$root/samples/dot_product.ein"
contains "too large --mesh message" "$tmp/err" "at most 16777216 devices"
# --mesh is read as a mesh line: the same limits and names as in a file, and a usage error.
check "overflowing --mesh" 2 "$bin" check -q --mesh 65536x65536x65536x65536 "$root/samples/dot_product.ein"
contains "overflowing --mesh message" "$tmp/err" "bad --mesh '65536x65536x65536x65536': the mesh has too many devices (more than 16777216) [P205]"
contains "overflowing --mesh caret" "$tmp/err" "$(printf '%10s^~~~~' '')"
check "exec: overflowing --mesh" 2 "$bin" exec --mesh 65536x65536x65536x65536 "$root/samples/dot_product.ein"
contains "exec: overflowing --mesh message" "$tmp/err" "the mesh has too many devices (more than 16777216) [P205]"
check "--mesh with an axis twice" 2 "$bin" check --mesh dp=2,dp=2 "$root/samples/dot_product.ein"
contains "--mesh axis twice message" "$tmp/err" "mesh axis 'dp' is declared twice [P208]"
check "exec: --mesh with an axis twice" 2 "$bin" exec --mesh dp=2,dp=2 "$root/samples/dot_product.ein"
check "--mesh with a non-ASCII name" 2 "$bin" check --mesh 'é=2' "$root/samples/dot_product.ein"
printf 'mesh é=2\n' >"$tmp/mesh_name.ein"
check "a non-ASCII mesh name in a file" 1 "$bin" check "$tmp/mesh_name.ein"
check "--mesh with more than a mesh" 2 "$bin" check --mesh '4; dim a=2' "$root/samples/dot_product.ein"
check "--mesh with a device order" 0 "$bin" check --json --mesh '2x2 devices [0 2 1 3]' "$root/samples/dot_product.ein"
# bad.ein: mesh 4, a broken statement, ok = x, w = foo(x): the statements that parse are
# still checked; a broken declaration stops the checker.
check "syntax errors: the other statements are checked" 1 "$bin" check "$tmp/bad.ein"
contains "the others were checked" "$tmp/err" "the statements with syntax errors were not checked; the others were [S999]"
contains "the good statement's plan" "$tmp/out" "bad.ein:3: ok = x"
contains "1 statement, singular" "$tmp/err" "1 file, 1 statement: 2 errors"
printf 'mesh 2\ndim i=4\ny_{i} = exq(x_{i})\n' >"$tmp/typo.ein"
check "a misspelt function" 1 "$bin" check -q "$tmp/typo.ein"
contains "did you mean for a misspelt function" "$tmp/err" "fix: did you mean 'exp'? Or declare it with 'fn exq elementwise'"
printf 'mesh 2\ndim i=4\nhidden_{i} = x_{i}\ny_{i} = hiden_{i}\n' >"$tmp/typo2.ein"
check "a misspelt tensor is a note" 0 "$bin" check "$tmp/typo2.ein"
contains "did you mean for a misspelt tensor" "$tmp/err" "hiden is read but no statement defines it, so it is a program input; did you mean hidden, which a statement defines? [S132]"
printf 'mesh 2\ndim i=4\ngx_{i} = x_{i}\nW^1_{i} = W^0_{i}\n' >"$tmp/notypo.ein"
check "conventions are not misspellings" 0 "$bin" check "$tmp/notypo.ein"
if grep -q S132 "$tmp/err"; then failed=$((failed + 1)); echo "FAIL: S132 on x/gx or W^0/W^1"; else passed=$((passed + 1)); fi
printf 'mesh 4\ndim i=8 k=8\ny_{i} = relu(x_{i k_0} w_{k_0})\n' >"$tmp/partial.ein"
check "a partial input to a non-linear function passes" 0 "$bin" check -q "$tmp/partial.ein"
contains "it is a warning that -q shows" "$tmp/err" "warning: the input of relu is partial over axis 0"
contains "counted as a warning" "$tmp/err" "0 errors, 1 warning"
check "--werror fails on it" 1 "$bin" check -q --werror "$tmp/partial.ein"
check "--strict makes it an error" 1 "$bin" check -q --strict "$tmp/partial.ein"
printf 'mesh dp=2 tp=2\ndim b=4 f=4\nh_{b_{dp} f_{tp}} = x_{b_{dp} f_{tp}}\n' >"$tmp/named.ein"
check "placements on a named mesh" 0 "$bin" check "$tmp/named.ein"
contains "placements labelled by axis" "$tmp/out" "(dp:S(0) tp:S(1))"
printf 'mesh 4 x
z_{i} = x_{i_0}
' >"$tmp/baddecl.ein"
check "a broken declaration stops the checker" 1 "$bin" check "$tmp/baddecl.ein"
contains "checker did not run" "$tmp/err" "the checker did not run: a declaration has a syntax error"

# exec: run plans on ranks and verify them.
check "exec help" 0 "$bin" exec --help
contains "exec help lists --show" "$tmp/out" "--show"
printf 'mesh 2\ndim i=4 k=6 j=4\nz_{ij}{U_0} = x_{i k_0} y_{k_0 j}\n' >"$tmp/dt.ein"
check "exec: DTensor walkthrough, partial result" 0 "$bin" exec --data arange --show z "$tmp/dt.ein"
contains "rank 0 partial sums" "$tmp/out" "[[ 38,  44,  50,  56],"
contains "rank 0 last row" "$tmp/out" "[308, 368, 428, 488]]"
contains "rank 1 partial sums" "$tmp/out" "[[ 263,  278,  293,  308],"
contains "rank 1 last row" "$tmp/out" "[1181, 1250, 1319, 1388]]"
contains "placement shown" "$tmp/out" "z (P(sum))"
contains "pass" "$tmp/out" "1 of 1 statements verified"
printf 'mesh 2\ndim i=4 k=6 j=4\nz_{ij} = x_{i k_0} y_{k_0 j}\n' >"$tmp/dt2.ein"
check "exec: DTensor walkthrough, all-reduced" 0 "$bin" exec --data arange --show z "$tmp/dt2.ein"
contains "all-reduced on rank 1" "$tmp/out" "rank 1 (1), z (R): [[ 301,  322,  343,  364],"
contains "the all-reduce ran" "$tmp/out" "ran: all-reduce(0)"
check "exec: input shown per rank" 0 "$bin" exec --data arange --show y "$tmp/dt2.ein"
contains "y rank 1 holds rows 4-6" "$tmp/out" "rank 1 (1), y (input) (S(0)): [[13, 14, 15, 16],"
# 0/0 and x/0: NaN is printed without the sign printf would give it (the host's NaN has it,
# a GPU's does not), infinities with theirs; equal NaNs verify.
printf 'mesh 2\ndim i=4\nq_{i_0} = (x_{i_0} - x_{i_0}) / (x_{i_0} - x_{i_0})\nv_{i_0} = x_{i_0} / (x_{i_0} - x_{i_0})\n' >"$tmp/nan.ein"
check "exec: NaN and infinity" 0 "$bin" exec --data arange --show q --show v "$tmp/nan.ein"
contains "NaN unsigned" "$tmp/out" "rank 1 (1), q (S(0)): [nan, nan]"
contains "infinity" "$tmp/out" "rank 0 (0), v (S(0)): [inf, inf]"
# exp(100) overflows f32 but not the f64 reference: a FAIL that says the data overflowed.
printf 'mesh 2\ndim i=128\ne_{i_0} = exp(x_{i_0})\n' >"$tmp/overflow.ein"
check "exec: f32 overflow fails" 1 "$bin" exec --data arange "$tmp/overflow.ein"
contains "exec: overflow explained" "$tmp/out" "note: values overflowed to inf or NaN"
check "exec: f64 holds it" 0 "$bin" exec --data arange --dtype f64 "$tmp/overflow.ein"
check "exec: --show twice, one a list" 0 "$bin" exec --data arange --show x --show z,y "$tmp/dt2.ein"
contains "--show x" "$tmp/out" "rank 1 (1), x (input) (S(1)):"
contains "--show y" "$tmp/out" "rank 1 (1), y (input) (S(0)): [[13, 14, 15, 16],"
contains "--show z" "$tmp/out" "rank 1 (1), z (R): [[ 301,  322,  343,  364],"
check "exec: --show of a tensor the file lacks" 2 "$bin" exec --show w "$tmp/dt2.ein"
contains "--show names the tensors" "$tmp/err" "--show w: $tmp/dt2.ein has no tensor of that name (it has x, y, z)"
check "exec --json" 0 "$bin" exec --json --data ints "$tmp/dt2.ein"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); s=d["statements"][0]; assert d["passed"] and s["exact"] and s["max_abs_error"]==0 and s["collectives"][0]["collective"]=="all-reduce(0)", d' "$tmp/out" &&
    passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: exec --json"; }
for seed in -1 99999999999999999999999 1e3 ''; do
    check "exec --seed '$seed' refused" 2 "$bin" exec --seed "$seed" "$tmp/dt2.ein"
    contains "exec --seed '$seed' says why" "$tmp/err" "expected a whole number from 0 to 18446744073709551615"
done
check "exec --seed at the top of its range" 0 "$bin" exec --seed 18446744073709551615 "$tmp/dt2.ein"
check "exec: random data, f64" 0 "$bin" exec --dtype f64 --seed 7 "$root/samples/dtensor_matmul.ein"
contains "f64 tolerance stated" "$tmp/out" "relative error <= 1e-10"
check "exec: a chosen fix runs and verifies" 0 "$bin" exec "$tmp/rule3.ein" --mesh 2
contains "the chosen all-gather ran" "$tmp/out" "ran: all-gather(0) W"
# --small plans at sizes of its own: the expect lines are left to check, and it says so.
check "exec --small with expect lines" 0 "$bin" exec --small "$root/samples/dot_product.ein"
contains "exec --small names the expectations it skips" "$tmp/err" "4 expect lines were not checked: --small plans at other sizes"
check "exec at the declared sizes checks them" 0 "$bin" exec "$root/samples/dot_product.ein"
if grep -q 'expect line' "$tmp/err"; then
    failed=$((failed + 1)); echo "FAIL: exec without --small notes skipped expectations"
else passed=$((passed + 1)); fi
printf 'mesh 2\nz_{i_0 j_0} = x_{ij}\n' >"$tmp/twice.ein"
check "exec: check errors refused" 1 "$bin" exec "$tmp/twice.ein"
contains "exec refusal message" "$tmp/err" "nothing ran"
check "exec --json: check errors refused" 1 "$bin" exec --json "$tmp/twice.ein"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert not d["passed"] and not d["ran"] and d["statements"]==[] and d["diagnostics"][0]["code"]=="S101" and "nothing ran" in d["error"], d' "$tmp/out" &&
    passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: exec --json on check errors"; }
# --json prints its document whenever nothing runs, whatever the reason (exit codes and
# messages as without --json).
notrun() { # notrun NAME TEXT : $tmp/out is exec --json's document for a run that did not run
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert not d["passed"] and not d["ran"] and d["statements"]==[] and sys.argv[2] in d["error"], d' "$tmp/out" "$2" &&
        passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: $1: no JSON saying '$2'"; sed 's/^/    /' "$tmp/out" | head -5; }
}
check "exec --json of a missing file" 2 "$bin" exec --json "$tmp/no-such.ein"
contains "exec --json: the message on stderr too" "$tmp/err" "no such file: '$tmp/no-such.ein'"
notrun "exec --json of a missing file" "no such file: '$tmp/no-such.ein'"
printf 'mesh 4\ndim i=1000000 j=1000000\nz_{i_0 j} = x_{i_0 j}\n' >"$tmp/huge.ein"
check "exec --json: the memory refusal" 2 "$bin" exec --json "$tmp/huge.ein"
contains "exec --json: memory on stderr" "$tmp/err" "of memory but"
notrun "exec --json: the memory refusal" "declare smaller ranges with 'dim'"
check "exec --json: --show of a tensor the file lacks" 2 "$bin" exec --json --show nope "$tmp/dt2.ein"
notrun "exec --json: --show nope" "--show nope: $tmp/dt2.ein has no tensor of that name"
check "exec --json: a bad --mesh" 2 "$bin" exec --json --mesh 0 "$tmp/dt2.ein"
contains "exec --json: bad --mesh on stderr" "$tmp/err" "bad --mesh '0'"
notrun "exec --json: a bad --mesh" "bad --mesh '0'"
check "exec --json: mpi outside mpirun" 2 "$bin" exec --json --backend mpi "$tmp/dt2.ein"
notrun "exec --json: mpi outside mpirun" "--backend mpi"
check "exec: syntax errors refused" 1 "$bin" exec "$tmp/bad.ein"
# Splits that give an index no single range: errors in check, so exec refuses them too.
for split in 'split a -> b c\nsplit a -> d e' 'split a -> b c\nsplit b -> a d' 'split a -> a c'; do
    printf "mesh 4\ndim a=8\n$split\nz_{b_0 c} = x_{b_0 c}\n" >"$tmp/split.ein"
    check "check: bad split ($split)" 1 "$bin" check -q "$tmp/split.ein"
    check "exec: bad split refused ($split)" 1 "$bin" exec "$tmp/split.ein"
    contains "exec: bad split message ($split)" "$tmp/err" "is split"
done
printf 'mesh 4\ndim b=65536 s=65536 d=65536\ny_{bsd} = x_{b_0 s d}\n' >"$tmp/huge.ein"
check "exec: too large for memory is refused up front" 2 "$bin" exec "$tmp/huge.ein"
contains "memory figure" "$tmp/err" "of memory but"
# Thousands of indices at --small sizes (2 each): past a double; S502 stops it in check, so
# exec never estimates its memory as "inf GB" (QA, before S502).
python3 -c "import sys; i=' '.join([c + \"'\" * p for p in range(77) for c in 'abcdefghijklmnopqrstuvwxyz'][:2000]); open(sys.argv[1], 'w').write('mesh 2\\ny_{%s} = x_{%s}\\n' % (i, i))" "$tmp/indices.ein"
check "exec --small: thousands of indices refused" 1 "$bin" exec --small "$tmp/indices.ein"
contains "exec --small: thousands of indices, S502" "$tmp/err" "[S502]"
if grep -q 'inf GB' "$tmp/err"; then failed=$((failed + 1)); echo "FAIL: exec printed inf GB"; else passed=$((passed + 1)); fi
check "exec: bad --data" 2 "$bin" exec --data nope "$tmp/dt.ein"
check "exec: missing file" 2 "$bin" exec "$tmp/nope.ein"
check "exec --backend mpi without mpirun" 2 "$bin" exec --backend mpi "$tmp/dt.ein"
contains "mpirun hint" "$tmp/err" "mpirun -np N"
if command -v mpirun >/dev/null; then
    # OpenMPI's own allocations would fail LeakSanitizer in the ASan build.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    export ASAN_OPTIONS=detect_leaks=0
    check "exec: mpi with the wrong number of ranks" 2 mpirun --oversubscribe -np 3 "$bin" exec --backend mpi "$tmp/dt.ein"
    contains "rank count message" "$tmp/err" "has 2 devices but mpirun started 3 ranks"
    # Rank 0 speaks for the run; mpirun aborts the job when a rank exits non-zero, so the
    # silent ranks exit 0 or rank 0 could be killed before it says why. Rank 0 delayed by a
    # second makes that race certain.
    check "exec: mpi wrong rank count, rank 0 late" 2 mpirun --oversubscribe -np 3 sh -c \
        'if [ "${OMPI_COMM_WORLD_RANK:-0}" = 0 ]; then sleep 1; fi; exec "$@"' sh "$bin" exec --backend mpi "$tmp/dt.ein"
    contains "rank count message, rank 0 late" "$tmp/err" "has 2 devices but mpirun started 3 ranks"
    printf 'mesh 2\ny_{i = x\n' >"$tmp/syntax.ein"
    check "exec: mpi syntax error, rank 0 late" 1 mpirun --oversubscribe -np 2 sh -c \
        'if [ "${OMPI_COMM_WORLD_RANK:-0}" = 0 ]; then sleep 1; fi; exec "$@"' sh "$bin" exec --backend mpi "$tmp/syntax.ein"
    contains "syntax error message, rank 0 late" "$tmp/err" "has syntax errors; nothing ran"
    check "exec: mpi" 0 mpirun --oversubscribe -np 2 "$bin" exec --backend mpi --data arange --show z "$tmp/dt.ein"
    contains "mpi: rank 1 partial sums" "$tmp/out" "[[ 263,  278,  293,  308],"
fi

# grad: the backward pass, checked; its output is a program that checks and runs.
printf 'mesh 4\ndim s=8 b=2 i=16 o=4\ny_{sbo_0} = x_{sbi} w_{io_0}\n' >"$tmp/lin.ein"
check "grad" 0 "$bin" grad "$tmp/lin.ein"
contains "grad: input gradient" "$tmp/out" "gx_{sbi} = gy_{s b o_0} w_{i o_0}"
contains "grad: its all-reduce" "$tmp/out" "expect all-reduce(0)"
contains "grad: weight gradient" "$tmp/out" "gw_{i o_0} = x_{sbi} gy_{s b o_0}"
contains "grad: summary" "$tmp/err" "2 derived statements (gw of w, gx of x): 0 errors"
cp "$tmp/out" "$tmp/lin_grad.ein"
check "grad output checks with its expectations" 0 "$bin" check -q "$tmp/lin_grad.ein"
check "grad --small output runs" 0 sh -c "'$bin' grad --small '$tmp/lin.ein' > '$tmp/lin_small.ein' && '$bin' exec --small '$tmp/lin_small.ein'"
check "grad --wrt" 0 "$bin" grad --wrt w "$tmp/lin.ein"
contains "grad --wrt: one statement, singular" "$tmp/err" "1 derived statement (gw of w)"
# A product of twelve factors: twelve gradients, eight named and the rest counted.
printf 'mesh 4\nz = x0_{ab} x1_{ab} x2_{ab} x3_{ab} x4_{ab} x5_{ab} x6_{ab} x7_{ab} x8_{ab} x9_{ab} y0_{ab} y1_{ab}\n' >"$tmp/twelve.ein"
check "grad: twelve factors" 0 "$bin" grad "$tmp/twelve.ein"
contains "grad: twelve gradients, four counted" "$tmp/err" "12 derived statements (gx0 of x0, gx1 of x1, gx2 of x2, gx3 of x3, gx4 of x4, gx5 of x5, gx6 of x6, gx7 of x7, and 4 more): 0 errors"
check "grad --wrt unknown tensor" 1 "$bin" grad --wrt q "$tmp/lin.ein"
contains "grad --wrt unknown message" "$tmp/err" "the program has no tensor q [G001]"
check "grad --json" 0 "$bin" grad --json "$tmp/lin.ein"
contains "grad --json wrt" "$tmp/out" '"wrt": "x"'
contains "grad --json collectives" "$tmp/out" '"all-reduce(0)"'
check "grad --plan" 0 "$bin" grad --plan "$tmp/lin.ein"
contains "grad --plan steps" "$tmp/out" "all-reduce(0)"
check "grad: missing file" 2 "$bin" grad "$tmp/nope.ein"
printf 'z = x_{k\n' >"$tmp/bad.ein"
check "grad: syntax error" 1 "$bin" grad "$tmp/bad.ein"

# export: torch, jax and latex; -o writes a file; bad --to is a usage error.
check "export latex" 0 "$bin" export --to latex "$tmp/lin.ein"
contains "export latex statement" "$tmp/out" "y_{s b o_0} = x_{sbi} w_{i o_0} \\quad \\textrm{(none)}"
cp "$tmp/out" "$tmp/lin.tex"
check "export latex parses back" 0 "$bin" check -q "$tmp/lin.tex"
check "export jax -o" 0 "$bin" export --to jax "$tmp/lin.ein" -o "$tmp/lin_jax.py"
contains "export jax mesh" "$tmp/lin_jax.py" "NamedSharding"
check "export torch" 0 "$bin" export --to torch --small "$tmp/lin.ein"
contains "export torch placements" "$tmp/out" "[Shard(1)]"
check "export: bad target" 2 "$bin" export --to tf "$tmp/lin.ein"
check "export: syntax error" 1 "$bin" export --to latex "$tmp/bad.ein"
# 53 indices: check accepts them, einsum has 52 letters; the refusal points at the statement.
idx53="$(printf '%s ' {a..z} {a..z}\' "a''")"
printf 'mesh 2\n\ny_{%s} = x_{%s}\n' "$idx53" "$idx53" >"$tmp/idx53.ein"
check "check: 53 indices" 0 "$bin" check -q "$tmp/idx53.ein"
check "export: 53 indices refused" 1 "$bin" export --to jax "$tmp/idx53.ein"
contains "export: 53 indices at the statement" "$tmp/err" "idx53.ein:3:1: error: a statement with more than 52 indices cannot be an einsum"
contains "export: 53 indices, nothing exported" "$tmp/err" "idx53.ein cannot be exported to jax; nothing exported"

# codes: the table of diagnostic codes; one code's row; an unknown code is a usage error.
check "codes" 0 "$bin" codes
contains "codes lists S106" "$tmp/out" "S106  error  a program input read with two different shapes"
check "codes S214" 0 "$bin" codes S214
contains "codes S214 is a warning" "$tmp/out" "S214  warning"
check "codes: unknown code" 2 "$bin" codes S9999
contains "codes: unknown code message" "$tmp/err" "no diagnostic code 'S9999'"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
