#!/usr/bin/env bash
# `shardscope check --compare` end to end: help, usage errors, a file with errors (reported,
# not ranked, exit 1), the table, and --format json against docs/check-json-v1.schema.json.
# Usage: test_compare.sh SHARDSCOPE_BINARY REPO_ROOT
set -u
bin=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# shellcheck source=checks.sh
source "$(dirname "$0")/checks.sh"
python=${PYTHON:-python3}

# samples/strategy_search.ein at a mesh (its expect lines describe the written sizes: dropped).
at_mesh() { # at_mesh SIZES OUT
    sed -e "s/^mesh .*/mesh $1/" -e '/^expect /d' "$root/samples/strategy_search.ein" >"$2"
}
at_mesh "dp=8 fsdp=1 tp=8" "$tmp/tp.ein"
at_mesh "dp=1 fsdp=64 tp=1" "$tmp/fsdp.ein"
# A batch of 1024 on one device does not fit in an H100's 80 GB; over 64 devices it does.
at_mesh "dp=1 fsdp=1 tp=1" "$tmp/one.ein"
sed -i 's/b=256/b=1024/' "$tmp/one.ein"
at_mesh "dp=8 fsdp=1 tp=8" "$tmp/big.ein"
sed -i 's/b=256/b=1024/' "$tmp/big.ein"
{ cat "$tmp/tp.ein"; printf 'z = q_{\n'; } >"$tmp/bad.ein"

check "check --help names --compare" 0 "$bin" check --help
contains "help text" "$tmp/out" "--compare"
check "one file is not a comparison" 2 "$bin" check --compare "$tmp/tp.ein"
contains "one file message" "$tmp/err" "--compare needs at least two files"
check "sarif is not a comparison" 2 "$bin" check --compare --format sarif "$tmp/tp.ein" "$tmp/fsdp.ein"
contains "format message" "$tmp/err" "--compare prints a table (text) or JSON"
check "missing file" 2 "$bin" check --compare "$tmp/tp.ein" "$tmp/nope.ein"

check "two strategies" 0 "$bin" check --compare "$tmp/tp.ein" "$tmp/fsdp.ein"
contains "each file checked as today" "$tmp/out" "Program totals"
contains "the table" "$tmp/out" "Comparison of 2 files"
contains "the best marked" "$tmp/out" "#1 (best)"
contains "why the other loses" "$tmp/out" "loses to #1"
contains "the memory breakdown" "$tmp/out" "  optimizer"
contains "the HBM fit" "$tmp/out" "fits in HBM"
check "quiet: the table only" 0 "$bin" check -q --compare "$tmp/tp.ein" "$tmp/fsdp.ein"
contains "quiet table" "$tmp/out" "Comparison of 2 files"

check "what does not fit ranks last" 0 "$bin" check -q --compare "$tmp/one.ein" "$tmp/big.ein"
contains "does not fit" "$tmp/out" "#2 $tmp/one.ein loses to #1 $tmp/big.ein: does not fit: needs"
contains "marked" "$tmp/out" "NO, of 80 GB"

check "a file with errors" 1 "$bin" check --compare "$tmp/bad.ein" "$tmp/tp.ein" "$tmp/fsdp.ein"
contains "its error positioned" "$tmp/err" "bad.ein:"
contains "not ranked" "$tmp/out" "not ranked: $tmp/bad.ein has"
contains "the others still ranked" "$tmp/out" "Comparison of 3 files"

# --hbm: the fit is judged against the given size. dp=8 tp=8 is faster but needs 5.97 GB per
# device, fsdp=64 2.15 GB: under 4 GB only fsdp=64 fits, so it ranks first.
check "--hbm in the help" 0 "$bin" check --help
contains "--hbm named" "$tmp/out" "--hbm"
check "--hbm 4GB" 0 "$bin" check -q --compare --hbm 4GB "$tmp/tp.ein" "$tmp/fsdp.ein"
contains "--hbm: what fits first" "$tmp/out" "#2 $tmp/tp.ein loses to #1 $tmp/fsdp.ein: does not fit: needs 5.97 GB per device, more than the 4 GB of HBM"
contains "--hbm: the row" "$tmp/out" "NO, of 4 GB"
contains "--hbm: the other fits" "$tmp/out" "yes, of 4 GB"
check "--hbm 80GB: the faster first" 0 "$bin" check -q --compare --hbm 80GB "$tmp/tp.ein" "$tmp/fsdp.ein"
contains "--hbm 80GB ranking" "$tmp/out" "#2 $tmp/fsdp.ein loses to #1 $tmp/tp.ein: +"
check "--hbm in the json" 0 "$bin" check --compare --format json --hbm 4GB "$tmp/tp.ein" "$tmp/fsdp.ein"
if "$python" - "$tmp/out" "$tmp" >"$tmp/py" 2>&1 <<'PY'
import json, sys
doc = json.load(open(sys.argv[1])); tmp = sys.argv[2]
c = doc["comparison"]
assert c["ranking"] == [tmp + "/fsdp.ein", tmp + "/tp.ein"], c["ranking"]
for f in doc["files"]:
    m = f["totals"]["program"]["memory"]
    assert m["hbm_bytes"] == 4e9, m["hbm_bytes"]
    assert m["fits"] == (f["path"] == tmp + "/fsdp.ein"), (f["path"], m["fits"])
PY
then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: --hbm json"; sed 's/^/    /' "$tmp/py" | tail -15
fi
check "--hbm without --compare" 0 "$bin" check --hbm 4GB "$tmp/tp.ein"
contains "--hbm: the totals' fit" "$tmp/out" "does NOT fit in 4 GB HBM"
check "bad --hbm" 2 "$bin" check --compare --hbm lots "$tmp/tp.ein" "$tmp/fsdp.ein"
contains "bad --hbm message" "$tmp/err" "bad --hbm 'lots'"
check "zero --hbm" 2 "$bin" check --hbm 0 "$tmp/tp.ein"

sed 's/d=8192/d=4096/' "$tmp/tp.ein" >"$tmp/small.ein"
check "different models" 0 "$bin" check -q --compare "$tmp/tp.ein" "$tmp/small.ein"
contains "different models said" "$tmp/out" "different models"

check "json" 1 "$bin" check --compare --format json "$tmp/tp.ein" "$tmp/bad.ein" "$tmp/fsdp.ein"
cp "$tmp/out" "$tmp/compare.json"
if "$python" -c 'import jsonschema' 2>/dev/null; then
    if "$python" - "$root/docs/check-json-v1.schema.json" "$tmp/compare.json" "$tmp" >"$tmp/py" 2>&1 <<'PY'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1])); doc = json.load(open(sys.argv[2])); tmp = sys.argv[3]
jsonschema.validate(doc, schema)
c = doc["comparison"]
files = {f["path"]: f for f in c["files"]}
assert [f["path"] for f in c["files"]] == [tmp + "/tp.ein", tmp + "/bad.ein", tmp + "/fsdp.ein"], c
assert not files[tmp + "/bad.ein"]["ranked"] and files[tmp + "/bad.ein"]["rank"] is None
assert files[tmp + "/bad.ein"]["errors"] > 0
assert len(c["ranking"]) == 2 and c["best"] == c["ranking"][0] and c["same_model"]
# The figures are each file's program totals, and the ranking is by step time.
totals = {f["path"]: f["totals"]["program"] for f in doc["files"]}
for p in c["ranking"]:
    assert files[p]["program"] == totals[p], p
steps = [files[p]["program"]["step_time_s"] for p in c["ranking"]]
assert steps == sorted(steps), steps
assert files[c["ranking"][0]]["why"] is None and files[c["ranking"][1]]["why"].startswith("+")
assert doc["totals"]["failed"]
PY
    then passed=$((passed + 1)); else
        failed=$((failed + 1)); echo "FAIL: json comparison"; sed 's/^/    /' "$tmp/py" | tail -15
    fi
else
    echo "note: python's jsonschema is missing: the JSON is not validated against the schema"
fi

# docs/guide.md's example is what the tool prints (its commands run in a scratch folder).
mkdir "$tmp/guide"
(cd "$tmp/guide" && mkdir samples && cp "$root/samples/strategy_search.ein" samples/ &&
    awk '/^\$ sed -e .*strategy_search.ein >/ {sub(/^\$ /, ""); print}' "$root/docs/guide.md" | bash &&
    "$bin" check -q --compare fsdp64.ein dp8_tp8.ein) >"$tmp/guide_actual.txt" 2>/dev/null
awk '/^\$ shardscope check -q --compare fsdp64.ein dp8_tp8.ein$/ {on=1; next} on && /^```/ {exit} on' \
    "$root/docs/guide.md" >"$tmp/guide_shown.txt"
if [ -s "$tmp/guide_shown.txt" ] && cmp -s "$tmp/guide_shown.txt" "$tmp/guide_actual.txt"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: docs/guide.md's compare example differs from the output:"
    diff "$tmp/guide_shown.txt" "$tmp/guide_actual.txt" | head -20; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
