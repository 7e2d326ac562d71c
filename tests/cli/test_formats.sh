#!/usr/bin/env bash
# check's CI formats against their consumers' schemas: --format json against
# docs/check-json-v1.schema.json, sarif against the SARIF 2.1.0 schema (the subset in
# schemas/, with GitHub code scanning's own requirements), junit as JUnit XML with a case per
# statement and per expect, github as workflow commands; --werror and --fail-on.
# Usage: test_formats.sh SHARDSCOPE_BINARY REPO_ROOT
set -u
bin=$1
root=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
# shellcheck source=checks.sh
source "$here/checks.sh"
python=${PYTHON:-python3}
if ! "$python" -c 'import jsonschema' 2>/dev/null; then
    echo "SKIP: python's jsonschema is not installed (pip install jsonschema)"
    exit 77
fi
pyok() { # pyok NAME SCRIPT ARGS... : the script asserts
    local name=$1
    shift
    if "$python" -c "$@" >"$tmp/py" 2>&1; then passed=$((passed + 1)); else
        failed=$((failed + 1)); echo "FAIL: $name"; sed 's/^/    /' "$tmp/py" | tail -15; fi
}

# A file with a statement, an expect, a syntax error and a warning-free rest.
printf 'mesh 4\ndim i=8 k=8\nz_{i} = x_{i k_0} y_{k_0}\nexpect all-reduce(0)\nq = foo(x_{i})\n' >"$tmp/bad.ein"
printf 'mesh 4\ndim i=8\ny_{i} = x_{i}\n' >"$tmp/one.ein"

check "json of every sample" 0 "$bin" check --format json "$root/samples"
pyok "json matches schema v1" '
import json, sys, jsonschema
schema = json.load(open(sys.argv[1])); doc = json.load(open(sys.argv[2]))
jsonschema.validate(doc, schema)
t = doc["totals"]
assert t["files"] == len(doc["files"]) > 5, t
assert t["statements"] == sum(len(f["statements"]) for f in doc["files"]), t
assert abs(t["time_s"] - sum(s["cost"]["time_s"] for f in doc["files"] for s in f["statements"])) < 1e-9 * max(1, t["time_s"])
assert t["comm_bytes_per_device"] > 0 and not t["failed"], t
' "$root/docs/check-json-v1.schema.json" "$tmp/out"
pyok "json program totals (issue 18): ZeRO stage 3 memory, traffic, the schema's new fields" '
import json, sys, jsonschema, copy
schema = json.load(open(sys.argv[1])); doc = json.load(open(sys.argv[2]))
z = [f for f in doc["files"] if f["path"].endswith("zero_memory.ein")][0]["totals"]["program"]
m = z["memory"]
assert z["training"] and z["devices"] == 64 and z["hardware"] == "a100", z
# 7.5e9 bf16 parameters over 64 devices: 2 + 2 + 12 bytes each
assert abs(m["weights_bytes"] - 2 * 7.5e9 / 64) < 1 and abs(m["optimizer_bytes"] - 12 * 7.5e9 / 64) < 1, m
assert m["fits"] and m["hbm_bytes"] == 80e9, m
assert abs(m["total_bytes"] - sum(m[k] for k in m if k.endswith("_bytes") and k not in ("total_bytes", "hbm_bytes"))) < 1, m
assert set(z["comm_bytes_by_kind"]) == {"all-gather", "reduce-scatter"}, z
assert abs(z["comm_bytes_by_kind"]["all-gather"]["bytes"] - 63 / 64 * 7.5e9 * 2) < 1, z
assert abs(z["step_time_s"] - z["compute_time_s"] - z["exposed_comm_time_s"]) < 1e-12, z
# A repeat block: statements of the body say how often they run (32 layers), the others once.
tl = [f for f in doc["files"] if f["path"].endswith("transformer_layer.ein")][0]["statements"]
assert tl[0]["repeat"] == 1 and tl[1]["repeat"] == 32 and tl[-1]["repeat"] == 1, [s["repeat"] for s in tl]
assert 0 < z["mfu"] <= 1, z
for bad in ({"fits": "yes"}, {"weights_bytes": -1}):
    d = copy.deepcopy(doc)
    d["files"][0]["totals"]["program"]["memory"].update(bad)
    try:
        jsonschema.validate(d, schema)
        raise SystemExit("schema accepted %r" % bad)
    except jsonschema.ValidationError:
        pass
d = copy.deepcopy(doc); del d["files"][0]["totals"]["program"]["comm_bytes_by_kind"]
try:
    jsonschema.validate(d, schema); raise SystemExit("schema accepted a program without comm_bytes_by_kind")
except jsonschema.ValidationError:
    pass
' "$root/docs/check-json-v1.schema.json" "$tmp/out"
check "--json is --format json" 0 "$bin" check --json "$tmp/one.ein"
pyok "--json has totals" 'import json,sys; d=json.load(open(sys.argv[1])); assert d["totals"]["statements"]==1 and d["files"][0]["totals"]["errors"]==0, d' "$tmp/out"
check "json of a file with errors" 1 "$bin" check --format json "$tmp/bad.ein"
pyok "json with errors matches schema" '
import json, sys, jsonschema
doc = json.load(open(sys.argv[2])); jsonschema.validate(doc, json.load(open(sys.argv[1])))
assert doc["totals"]["errors"] == 1 and doc["totals"]["failed"], doc["totals"]
' "$root/docs/check-json-v1.schema.json" "$tmp/out"

# grad --json follows check's schema: the file's totals and the run's (check's code).
check "grad --json" 0 "$bin" grad --json "$root/samples/megatron_mlp.ein"
cp "$tmp/out" "$tmp/grad.json"
check "grad --json with an error" 1 "$bin" grad --json --wrt nope "$root/samples/megatron_mlp.ein"
pyok "grad --json matches schema v1, with totals" '
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
for path in sys.argv[2:]:
    jsonschema.validate(json.load(open(path)), schema)
doc = json.load(open(sys.argv[2]))
f = doc["files"][0]; t = doc["totals"]
assert t["files"] == 1 and t["statements"] == len(f["statements"]) == f["totals"]["statements"] > 0, t
assert abs(t["time_s"] - sum(s["cost"]["time_s"] for s in f["statements"])) < 1e-9 * max(1, t["time_s"]), t
assert not t["failed"] and all(s["wrt"] for s in f["statements"]), t
bad = json.load(open(sys.argv[3]))["totals"]
assert bad["failed"] and bad["errors"] == 1, bad
' "$root/docs/check-json-v1.schema.json" "$tmp/grad.json" "$tmp/out"
check "sarif of every sample" 0 "$bin" check --format sarif "$root/samples"
cp "$tmp/out" "$tmp/samples.sarif"
check "sarif with errors" 1 "$bin" check --format sarif "$tmp/bad.ein"
cp "$tmp/out" "$tmp/bad.sarif"
pyok "sarif matches SARIF 2.1.0 and code scanning" '
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
fmt = jsonschema.FormatChecker()
for path in sys.argv[2:]:
    log = json.load(open(path))
    jsonschema.Draft7Validator(schema, format_checker=fmt).validate(log)
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    run = log["runs"][0]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert len(rules) == len(set(rules))
    for r in run["results"]:
        # GitHub code scanning: ruleId, message.text, a location with a uri and startLine.
        assert r["ruleId"] == rules[r["ruleIndex"]], r
        assert r["message"]["text"], r
        loc = r["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] and loc["region"]["startLine"] >= 1, r
bad = json.load(open(sys.argv[3]))["runs"][0]["results"]
p108 = [r for r in bad if r["ruleId"] == "P108"]
assert len(p108) == 1 and p108[0]["level"] == "error", bad
reg = p108[0]["locations"][0]["physicalLocation"]["region"]
assert (reg["startLine"], reg["startColumn"], reg["endColumn"]) == (5, 5, 8), reg
assert "foo" in p108[0]["message"]["text"]
' "$here/schemas/sarif-2.1.0-subset.schema.json" "$tmp/samples.sarif" "$tmp/bad.sarif"
# The schema copy itself rejects what code scanning would (so the check above can fail).
pyok "sarif schema rejects a wrong log" '
import json, sys, jsonschema
schema = json.load(open(sys.argv[1])); log = json.load(open(sys.argv[2]))
log["runs"][0]["results"][0]["level"] = "fatal"
try:
    jsonschema.validate(log, schema)
except jsonschema.ValidationError:
    pass
else:
    raise SystemExit("a level outside the enum was accepted")
' "$here/schemas/sarif-2.1.0-subset.schema.json" "$tmp/bad.sarif"

check "junit with errors" 1 "$bin" check --format junit "$tmp/bad.ein"
cp "$tmp/out" "$tmp/bad.xml"
check "junit of a sample" 0 "$bin" check --format junit "$root/samples/bracket_form.ein"
pyok "junit cases: a statement or expect each" '
import sys, xml.etree.ElementTree as ET
suites = ET.parse(sys.argv[1]).getroot()
assert suites.tag == "testsuites"
suite = suites.find("testsuite")
cases = suite.findall("testcase")
src = open(sys.argv[3]).read().splitlines()
expects = [l for l in src if l.startswith("expect")]
statements = [c for c in cases if "expect" not in c.get("name")]
assert len([c for c in cases if ": expect" in c.get("name")]) == len(expects) > 0
assert len(statements) >= len(expects), [c.get("name") for c in cases]
assert int(suite.get("tests")) == len(cases) and suite.get("failures") == "0"
bad = ET.parse(sys.argv[2]).getroot().find("testsuite")
fails = [c for c in bad.findall("testcase") if c.find("failure") is not None]
assert len(fails) == 1 and fails[0].find("failure").get("type") == "P108", ET.tostring(bad)
assert bad.get("failures") == "1"
assert any(c.get("name") == "line 4: expect all-reduce(0)" for c in bad.findall("testcase"))
assert any(c.get("name") == "line 3: z_{i} = x_{i k_0} y_{k_0}" for c in bad.findall("testcase"))
' "$tmp/out" "$tmp/bad.xml" "$root/samples/bracket_form.ein"

# Newlines in attribute values (a file name, a statement continued with \) as character
# references: an XML parser turns raw ones into spaces.
nl_path="$tmp/new
line.ein"
printf 'mesh 4\ndim i=8 k=8\nz_{i} = x_{i k_0} \\\n    y_{k_0}\nexpect all-reduce(0)\nq = foo(x_{i})\n' >"$nl_path"
check "junit of a file whose name has a newline" 1 "$bin" check --format junit "$nl_path"
pyok "junit: newlines in attributes survive parsing" '
import sys, xml.etree.ElementTree as ET
raw = open(sys.argv[1]).read()
assert "&#10;" in raw, raw
suite = ET.fromstring(raw).find("testsuite")
path = sys.argv[2]
assert suite.get("name") == path, repr(suite.get("name"))
cases = suite.findall("testcase")
assert all(c.get("file") == path and c.get("classname") == path for c in cases), [c.get("file") for c in cases]
assert any(c.get("name") == "line 3: z_{i} = x_{i k_0} \\\n    y_{k_0}" for c in cases), [c.get("name") for c in cases]
' "$tmp/out" "$nl_path"

check "github annotations" 1 "$bin" check --format github "$tmp/bad.ein"
contains "github error line" "$tmp/out" "::error file=$tmp/bad.ein,line=5,col=5,endLine=5,endColumn=8,title=shardscope P108::[P108] unknown function 'foo'"
check "github of a clean file" 0 "$bin" check --format github "$tmp/one.ein"
if [ -s "$tmp/out" ]; then failed=$((failed + 1)); echo "FAIL: github output for a clean file"; else passed=$((passed + 1)); fi
printf 'mesh a=2\ndim i=4\nz_{i} = x_{i}, y\n' >"$tmp/comma.ein"
"$bin" check --format github "$tmp/comma.ein" >"$tmp/out" 2>&1
pyok "github escapes properties and data" '
import sys
for line in open(sys.argv[1]):
    if line.startswith("::"):
        head, _, msg = line[2:].partition("::")
        props = head.split(" ", 1)[1]
        for kv in props.split(","):
            k, _, v = kv.partition("=")
            assert ":" not in v and k, line
        assert "\n" not in msg.rstrip("\n") and "\r" not in msg, line
' "$tmp/out"

# --werror and --fail-on.
printf 'mesh 4\ndim i=6\ny_{i_0} = x_{i_0}\nZ := x_{i}\n' >"$tmp/warn.ein"
"$bin" check --format json "$tmp/warn.ein" >"$tmp/warn.json"
codes=$("$python" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(sorted({x["severity"]+":"+x["code"] for f in d["files"] for x in f["diagnostics"]})))' "$tmp/warn.json")
warning=$(tr ' ' '\n' <<<"$codes" | sed -n 's/^warning://p' | head -1)
note=$(tr ' ' '\n' <<<"$codes" | sed -n 's/^note://p' | head -1)
if [ -n "$warning" ]; then
    check "a warning passes" 0 "$bin" check -q "$tmp/warn.ein"
    check "--werror fails on it" 1 "$bin" check -q --werror "$tmp/warn.ein"
    check "--werror in sarif" 1 "$bin" check --werror --format sarif "$tmp/warn.ein"
    contains "--werror warnings are errors in sarif" "$tmp/out" '"level": "error"'
    check "--fail-on the warning's code" 1 "$bin" check -q --fail-on "$warning" "$tmp/warn.ein"
else
    failed=$((failed + 1)); echo "FAIL: $tmp/warn.ein gave no warning ($codes)"
fi
if [ -n "$note" ]; then
    check "--fail-on a note's code" 1 "$bin" check -q --fail-on "S001,$note" "$tmp/warn.ein"
fi
# A --fail-on code fails the run in every format, as --werror's warnings do: a failure, not
# a note that exits 1 unexplained.
printf 'mesh 4\nz = x_{r_0 e} y_{r_0 e}\n' >"$tmp/note.ein"
check "the note passes" 0 "$bin" check --format json "$tmp/note.ein"
pyok "the file gives note S501" 'import json,sys; d=json.load(open(sys.argv[1])); assert [x["code"] for x in d["files"][0]["diagnostics"] if x["severity"]=="note"]==["S501"], d' "$tmp/out"
check "--fail-on the note: junit" 1 "$bin" check --fail-on S501 --format junit "$tmp/note.ein"
pyok "junit: the note is a failure" '
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.get("failures") == "1", ET.tostring(root)
f = root.find("testsuite").find("testcase").find("failure")
assert f is not None and f.get("type") == "S501" and "error:" in f.text, ET.tostring(root)
' "$tmp/out"
check "--fail-on the note: github" 1 "$bin" check --fail-on S501 --format github "$tmp/note.ein"
contains "github: ::error" "$tmp/out" "::error file=$tmp/note.ein,"
if grep -q "::notice" "$tmp/out"; then failed=$((failed + 1)); echo "FAIL: github: still ::notice"; else passed=$((passed + 1)); fi
check "--fail-on the note: sarif" 1 "$bin" check --fail-on S501 --format sarif "$tmp/note.ein"
pyok "sarif: level error" 'import json,sys; r=json.load(open(sys.argv[1]))["runs"][0]["results"]; assert [(x["ruleId"],x["level"]) for x in r]==[("S501","error")], r' "$tmp/out"
check "--fail-on the note: text" 1 "$bin" check -q --fail-on S501 "$tmp/note.ein"
contains "text: reported as an error" "$tmp/err" "error: "
contains "text: the summary counts it" "$tmp/err" "1 file, 1 statement: 1 error, 0 warnings"
check "--fail-on the note: json" 1 "$bin" check --fail-on S501 --format json "$tmp/note.ein"
# JSON reports it as an error too (it said "note" with errors 0 and failed true), counted so,
# its own severity kept.
pyok "json: the note is an error, counted as one" '
import json, sys, jsonschema
d = json.load(open(sys.argv[2])); jsonschema.validate(d, json.load(open(sys.argv[1])))
f = d["files"][0]; t = d["totals"]
assert [(x["code"], x["severity"], x.get("own_severity")) for x in f["diagnostics"]] == [("S501", "error", "note")], f["diagnostics"]
assert f["errors"] == f["totals"]["errors"] == t["errors"] == 1, (f["errors"], f["totals"], t)
assert f["totals"]["notes"] == t["notes"] == 0 and t["failed"], t
' "$root/docs/check-json-v1.schema.json" "$tmp/out"
# QA's file: a warning on each statement; --werror makes them errors in JSON as elsewhere.
printf 'mesh 4\ndim i=8 k=8\na_{i} = x_{i k_0} u_{k_0}\nb_{i} = x_{i_0 k} u_{k}\n' >"$tmp/twowarn.ein"
check "json: warnings pass" 0 "$bin" check --format json "$tmp/twowarn.ein"
cp "$tmp/out" "$tmp/twowarn.json"
check "--werror: json" 1 "$bin" check --werror --format json "$tmp/twowarn.ein"
pyok "json: --werror warnings are errors, counted as errors" '
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
plain = json.load(open(sys.argv[2])); werror = json.load(open(sys.argv[3]))
jsonschema.validate(werror, schema)
pd = plain["files"][0]["diagnostics"]; wd = werror["files"][0]["diagnostics"]
warns = [x for x in pd if x["severity"] == "warning"]
assert warns and all("own_severity" not in x for x in pd), pd
assert [x["code"] for x in wd] == [x["code"] for x in pd], wd
for p, w in zip(pd, wd):
    if p["severity"] == "warning":
        assert (w["severity"], w["own_severity"]) == ("error", "warning"), w
    else:
        assert w == p, (p, w)
f = werror["files"][0]; t = werror["totals"]
want = plain["totals"]["errors"] + len(warns)
assert f["errors"] == f["totals"]["errors"] == t["errors"] == want, (f["errors"], f["totals"], t)
assert f["warnings"] == f["totals"]["warnings"] == t["warnings"] == 0 and t["failed"], t
assert t["notes"] == plain["totals"]["notes"] and not plain["totals"]["failed"], t
d = json.loads(json.dumps(werror)); d["files"][0]["diagnostics"][0]["own_severity"] = "error"
try:
    jsonschema.validate(d, schema); raise SystemExit("schema accepted own_severity error")
except jsonschema.ValidationError:
    pass
' "$root/docs/check-json-v1.schema.json" "$tmp/twowarn.json" "$tmp/out"
if [ -n "$warning" ]; then
    check "--werror: text summary counts the warning as an error" 1 "$bin" check -q --werror "$tmp/warn.ein"
    contains "--werror summary" "$tmp/err" "0 warnings"
    if grep -q ": 0 errors" "$tmp/err"; then failed=$((failed + 1)); echo "FAIL: --werror summary says 0 errors"; else passed=$((passed + 1)); fi
    check "--werror: junit failure" 1 "$bin" check --werror --format junit "$tmp/warn.ein"
    pyok "junit: the warning is a failure" 'import sys, xml.etree.ElementTree as ET; r=ET.parse(sys.argv[1]).getroot(); assert int(r.get("failures")) >= 1, ET.tostring(r)' "$tmp/out"
fi
check "--fail-on another code passes" 0 "$bin" check -q --fail-on S001 "$tmp/one.ein"
# A well-formed code that no diagnostic has is a usage error: a misspelt gate failed nothing.
check "--fail-on a code that does not exist" 2 "$bin" check --fail-on S998 "$tmp/one.ein"
contains "--fail-on names the unknown code" "$tmp/err" "no diagnostic code 'S998'"
contains "--fail-on suggests the nearest code" "$tmp/err" "did you mean S999?"
if [ -s "$tmp/out" ]; then failed=$((failed + 1)); echo "FAIL: --fail-on S998 printed a check"; else passed=$((passed + 1)); fi
check "--fail-on an unknown code among known ones" 2 "$bin" check --fail-on S501,S12345678 "$tmp/note.ein"
contains "--fail-on names it, no suggestion" "$tmp/err" "no diagnostic code 'S12345678' (shardscope codes lists them)"
check "--fail-on a malformed code" 2 "$bin" check --fail-on bogus "$tmp/one.ein"
contains "--fail-on says what a code is" "$tmp/err" "expected a diagnostic code such as S301"
check "unknown format" 2 "$bin" check --format xml "$tmp/one.ein"
check "--json with another --format" 2 "$bin" check --json --format sarif "$tmp/one.ein"
contains "--json with --format sarif: says why" "$tmp/err" "--json is --format json: it cannot be combined with --format sarif"
if [ -s "$tmp/out" ]; then failed=$((failed + 1)); echo "FAIL: --json --format sarif printed something"; else passed=$((passed + 1)); fi
check "--json with --format json" 0 "$bin" check --json --format json "$tmp/one.ein"
check "one statement" 0 "$bin" check -q "$tmp/one.ein"
contains "1 statement, singular" "$tmp/err" "1 file, 1 statement: 0 errors"
# Statements an error stops are counted too, and said to have no plan (the summary read
# "0 statements" for a file whose one statement failed).
printf 'mesh 4\nz_{i} = x_{i j_0}\nw_{k} = y_{k}\nv_{q_0} = u_{q_0 q_0}\n' >"$tmp/failing.ein"
check "a statement in error" 1 "$bin" check -q "$tmp/failing.ein"
contains "statements in error counted, not planned" "$tmp/err" "1 file, 3 statements (1 not planned): 1 error"
# A byte order mark is read as a space (docs/reference.md): one column, in every format,
# at the start of the file and of any other line.
printf '\xef\xbb\xbfw = foo(x)\n\xef\xbb\xbfv = bar(x)\n' >"$tmp/bom.ein"
check "text: a byte order mark is one column" 1 "$bin" check -q "$tmp/bom.ein"
contains "first line" "$tmp/err" "bom.ein:1:6: error: unknown function 'foo'"
contains "second line" "$tmp/err" "bom.ein:2:6: error: unknown function 'bar'"
check "github: the same column" 1 "$bin" check --format github "$tmp/bom.ein"
contains "github col" "$tmp/out" "line=1,col=6,endLine=1,endColumn=9"
check "sarif: the same column" 1 "$bin" check --format sarif "$tmp/bom.ein"
pyok "sarif startColumn" '
import json, sys
cols = sorted((r["locations"][0]["physicalLocation"]["region"]["startLine"],
               r["locations"][0]["physicalLocation"]["region"]["startColumn"])
              for r in json.load(open(sys.argv[1]))["runs"][0]["results"] if r["ruleId"] == "P108")
assert cols == [(1, 6), (2, 6)], cols
' "$tmp/out"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
