#!/usr/bin/env bash
# `shardscope render` and `gui` from the command line without a display: SVG works, PNG and
# the window say why they cannot and what to do; bad input gives clear messages and exit codes.
# Usage: test_render_cli.sh SHARDSCOPE SOURCE_DIR
set -u
bin=$1
src=$2
samples=$src/samples
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset DISPLAY WAYLAND_DISPLAY
fails=0 passes=0

# expect NAME RC PATTERN -- ARGS...: exit code RC and PATTERN (grep -E) in stderr+stdout.
expect() {
    local name=$1 want=$2 pattern=$3
    shift 4
    local out rc
    out=$("$bin" "$@" 2>&1)
    rc=$?
    if [ "$rc" -ne "$want" ] || ! grep -qE -- "$pattern" <<<"$out"; then
        echo "FAIL: $name: exit $rc (want $want), output:"
        echo "$out" | head -20
        fails=$((fails + 1))
    else
        passes=$((passes + 1))
    fi
}

expect "svg without a display" 0 '^$' -- render "$samples/placements_2x2.ein" --tensor 'W^{SS}' -o "$tmp/ss.svg"
grep -q '</svg>' "$tmp/ss.svg" || { echo "FAIL: no SVG written"; fails=$((fails + 1)); }
for fill in '#1f77b4' '#ff7f0e' '#2ca02c' '#d62728'; do
    grep -q "fill=\"$fill\"" "$tmp/ss.svg" || { echo "FAIL: SVG lacks device colour $fill"; fails=$((fails + 1)); }
done
for view in tiling mesh plan steps; do
    expect "svg $view" 0 '^$' -- render "$samples/sequence_parallel.ein" --view "$view" -o "$tmp/$view.svg"
done
# (A build without the GUI refuses PNG and the window for that reason instead.)
expect "png without a display" 2 'no display.*\.svg.*xvfb-run|built without the GUI.*\.svg' -- render "$samples/placements_2x2.ein" -o "$tmp/x.png"
[ -e "$tmp/x.png" ] && { echo "FAIL: a PNG was written"; fails=$((fails + 1)); }
expect "gui without a display" 2 'needs a display.*xvfb-run|built without the GUI' -- gui "$samples/placements_2x2.ein"
expect "gui --compare one file" 2 '\--compare needs at least two files|built without the GUI' -- gui --compare "$samples/strategy_search.ein"
expect "gui --compare a missing file" 2 'no such file|built without the GUI' -- gui --compare "$samples/strategy_search.ein" "$tmp/none.ein"
expect "missing file" 2 'no such file' -- render "$tmp/none.ein" -o "$tmp/a.svg"
expect "unknown tensor" 2 "no tensor 'Q' in the program \(it has .*W\^\{SS\}" -- render "$samples/placements_2x2.ein" --tensor Q -o "$tmp/a.svg"
expect "statement out of range" 2 'statement 99 is out of range: the program has 6 statements' -- render "$samples/placements_2x2.ein" --statement 99 -o "$tmp/a.svg"
expect "tensor not in statement" 2 "statement 1 has no tensor 'Z'" -- render "$samples/placements_2x2.ein" --statement 1 --tensor Z -o "$tmp/a.svg"
expect "bad extension" 2 'must end in \.svg or \.png' -- render "$samples/placements_2x2.ein" -o "$tmp/a.jpg"
expect "bad view" 2 "unknown view 'pie'" -- render "$samples/placements_2x2.ein" --view pie -o "$tmp/a.svg"
expect "unwritable output" 2 'cannot write' -- render "$samples/placements_2x2.ein" -o "$tmp/no/such/dir/a.svg"
expect "bad drawn dimension" 2 'has 4 dimensions: --rows and --cols take 0 to 3' -- render "$samples/placements_2x2.ein" --tensor W^SS --rows 0 --cols 7 -o "$tmp/a.svg"
# -1 means "not given" inside: a negative value is refused, not ignored or misreported.
expect "negative --rows" 2 "rows: expected a dimension: 0, 1, ... \(0-based\), not '-2'" -- render "$samples/placements_2x2.ein" --tensor W^SS --rows -2 -o "$tmp/a.svg"
expect "negative --rows and --cols" 2 "expected a dimension: 0, 1, ... \(0-based\), not '-[23]'" -- render "$samples/placements_2x2.ein" --tensor W^SS --rows -2 --cols -3 -o "$tmp/a.svg"
expect "negative --cols" 2 "cols: expected a dimension: 0, 1, ... \(0-based\), not '-3'" -- render "$samples/placements_2x2.ein" --tensor W^SS --rows 0 --cols -3 -o "$tmp/a.svg"
expect "statement 0" 2 'statement: Value 0 not in range 1' -- render "$samples/placements_2x2.ein" --statement 0 -o "$tmp/a.svg"
expect "empty tensor name" 2 "tensor: a tensor name, not ''" -- render "$samples/placements_2x2.ein" --tensor '' -o "$tmp/a.svg"
expect "step out of range" 2 'statement 1 has [0-9]+ frames: --step takes 0 to [0-9]+' -- render "$samples/placements_2x2.ein" --view steps --step 99 -o "$tmp/a.svg"
expect "negative step" 2 'frames: --step takes 0 to' -- render "$samples/placements_2x2.ein" --view steps --step -1 -o "$tmp/a.svg"
# A picture that cannot show what was asked is an error, not a file holding the reason.
printf 'mesh 65536x2\ndim i=131072 j=4\nz_{i_{01} j} = x_{i_{01} j}\n' >"$tmp/huge.ein"
expect "tiling of too many devices" 2 'cannot draw the tiling view: the mesh has 131072 devices; tilings are drawn for at most 65536; nothing written' -- render "$tmp/huge.ein" -o "$tmp/huge.svg"
expect "mesh view of too many devices" 2 'cannot draw the mesh view: 131072 devices are too many to draw a cell each' -- render "$tmp/huge.ein" --view mesh -o "$tmp/huge.svg"
[ -e "$tmp/huge.svg" ] && { echo "FAIL: a picture of the huge mesh was written"; fails=$((fails + 1)); }
expect "plan view of many devices" 0 '^$' -- render "$tmp/huge.ein" --view plan -o "$tmp/plan.svg"
printf 'mesh 2\nA_{i_0} = = B\n' >"$tmp/bad.ein"
expect "syntax errors" 1 'nothing drawn' -- render "$tmp/bad.ein" -o "$tmp/a.svg"
printf 'mesh 2\n' >"$tmp/empty.ein"
expect "no statement" 2 'no statement to draw' -- render "$tmp/empty.ein" -o "$tmp/a.svg"

# --scale and --tight (publication output): twice the size, text included; cropped to the ink.
expect "svg --scale 2" 0 '^$' -- render "$samples/placements_2x2.ein" --view mesh --scale 2 -o "$tmp/s2.svg"
grep -q '<svg [^>]*width="1520" height="1120"' "$tmp/s2.svg" || { echo "FAIL: --scale 2 is not 1520x1120"; fails=$((fails + 1)); }
grep -q 'font-size="28"' "$tmp/s2.svg" || { echo "FAIL: --scale 2 text is not 28 px"; fails=$((fails + 1)); }
expect "svg --tight" 0 '^$' -- render "$samples/placements_2x2.ein" --view mesh --tight -o "$tmp/t.svg"
width=$(sed -n 's/.*<svg [^>]*width="\([0-9.]*\)".*/\1/p' "$tmp/t.svg")
awk -v w="$width" 'BEGIN { exit !(w > 100 && w < 500) }' || { echo "FAIL: --tight width $width (natural 760)"; fails=$((fails + 1)); }
expect "--scale out of range" 2 'scale.*not in range' -- render "$samples/placements_2x2.ein" --scale 0 -o "$tmp/x.svg"

# A collective's message steps (--message K): the all-reduce of fsdp_tp's statement 4.
expect "steps --message 1" 0 '^$' -- render "$samples/fsdp_tp.ein" --statement 4 --view steps --step 2 --message 1 -o "$tmp/m1.svg"
grep -q 'reduce-scatter ring step 1 of 3' "$tmp/m1.svg" || { echo "FAIL: --message 1 lacks its title"; fails=$((fails + 1)); }
expect "--message past the schedule" 2 'out of range: the collective has 6 message steps' -- render "$samples/fsdp_tp.ein" --statement 4 --view steps --step 2 --message 7 -o "$tmp/m7.svg"
expect "--message on a frame without a collective" 2 'needs the steps view' -- render "$samples/fsdp_tp.ein" --statement 4 --view steps --step 1 --message 1 -o "$tmp/m0.svg"

# The step-through exported whole: one animated SVG, and a numbered series (SVG here; the PNG
# series is drawn under Xvfb by test_screens).
expect "steps --animate" 0 '^$' -- render "$samples/fsdp_tp.ein" --statement 4 --view steps --animate --seconds 2 -o "$tmp/anim.svg"
[ "$(grep -c '<animate ' "$tmp/anim.svg")" -ge 8 ] || { echo "FAIL: --animate has too few animated pictures"; fails=$((fails + 1)); }
grep -q '<g id="frame-2-message-6" visibility="hidden">' "$tmp/anim.svg" || { echo "FAIL: --animate lacks the all-reduce's last message step"; fails=$((fails + 1)); }
expect "steps --frames svg" 0 'frame-001\.svg	frame 0$' -- render "$samples/fsdp_tp.ein" --statement 4 --view steps --frames "$tmp/series" --format svg
n_anim=$(grep -c '<animate ' "$tmp/anim.svg")
n_files=$(find "$tmp/series" -name 'frame-*.svg' | wc -l)
[ "$n_anim" -eq "$n_files" ] || { echo "FAIL: --frames wrote $n_files files, --animate has $n_anim pictures"; fails=$((fails + 1)); }
grep -q 'reduce-scatter ring step 1 of 3' "$tmp/series/frame-004.svg" || { echo "FAIL: frame-004.svg is not the all-reduce's first message step"; fails=$((fails + 1)); }
expect "--step needs steps" 2 '--step picks a frame of the step-through: it needs --view steps' -- render "$samples/fsdp_tp.ein" --step 2 -o "$tmp/step.svg"
expect "--step 0 needs steps too" 2 'it needs --view steps' -- render "$samples/fsdp_tp.ein" --view plan --step 0 -o "$tmp/step.svg"
[ -e "$tmp/step.svg" ] && { echo "FAIL: --step without the steps view wrote a picture"; fails=$((fails + 1)); }
expect "--animate needs steps" 2 '--animate exports the step-through: it needs --view steps' -- render "$samples/fsdp_tp.ein" --animate -o "$tmp/a.svg"
expect "--animate needs svg" 2 'must end in \.svg' -- render "$samples/fsdp_tp.ein" --view steps --animate -o "$tmp/a.png"
expect "--frames and -o" 2 'give one of them' -- render "$samples/fsdp_tp.ein" --view steps --frames "$tmp/s2" -o "$tmp/a.svg"
expect "neither -o nor --frames" 2 'give one of them' -- render "$samples/fsdp_tp.ein" --view steps
expect "--frames bad format" 2 "--format is png or svg, not 'gif'" -- render "$samples/fsdp_tp.ein" --view steps --frames "$tmp/s3" --format gif
printf 'x' >"$tmp/afile"
expect "--frames into a file" 2 'cannot make the folder' -- render "$samples/fsdp_tp.ein" --view steps --frames "$tmp/afile" --format svg
expect "--frames png without a display" 2 'no display.*xvfb-run|built without the GUI' -- render "$samples/fsdp_tp.ein" --view steps --frames "$tmp/s4/new/dir"
# Nothing drawn, nothing made: no folders left behind.
[ -e "$tmp/s4" ] && { echo "FAIL: --frames without a display made $tmp/s4"; fails=$((fails + 1)); }

# The GUI's verify runs what `exec --small` runs: every sample, and an index declared with
# `dim` and sharded over device groups of different sizes (s_{sp} and s_{sp,tp}: at small
# sizes, with the declaration ignored, it was a conflicting device index, S005, issue 16).
for f in "$samples"/*.ein; do
    expect "exec --small $(basename "$f")" 0 'verified' -- exec --small "$f"
done
printf '%s\n' 'mesh sp=2 tp=2' 'dim b=4 s=64 d=16' 'y_{b s_{sp} d} = x_{b s_{sp} d}' \
    'z_{b s_{sp,tp} d} = y_{b s_{sp} d}' >"$tmp/groups.ein"
expect "check accepts s over sp and sp,tp" 0 '0 errors' -- check "$tmp/groups.ein"
expect "exec --small runs it" 0 '2 of 2 statements verified' -- exec --small "$tmp/groups.ein"
# Undeclared, the same index is two device indices of different sizes: check and exec agree.
grep -v '^dim' "$tmp/groups.ein" >"$tmp/undeclared.ein"
expect "check refuses an undeclared device index of two sizes" 1 'S005' -- check "$tmp/undeclared.ein"
expect "exec --small refuses it too" 1 'S005' -- exec --small "$tmp/undeclared.ein"

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
