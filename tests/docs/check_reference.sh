#!/usr/bin/env bash
# Checks every example of a Markdown reference (docs/reference.md) with shardscope.
# Usage: check_reference.sh SHARDSCOPE_BINARY DOCUMENT.md
#
# Each fenced block is a program of its own (a document read by `shardscope check` is one
# program with one mesh, so the examples, which declare different meshes, are checked one
# by one). Each is written to a file of its own with the document's line numbers (blank lines
# before it), so a diagnostic's line is the document's line. The fences:
#   ```ein                 must check with no error and no warning (`check --werror`); its
#                          `expect` lines state the collectives, so a changed plan fails
#   ```ein-warning CODE    must check without errors and warn with CODE (and fail --werror)
#   ```ein-error CODE      must fail (exit 1) with an error CODE; a G code runs `grad`,
#                          the others `check`
# Options for the command may follow the kind and code (```ein --strict,
# ```ein-error S212 --strict).
#   ```text                a transcript when its first line is a command ("$ shardscope ...",
#                          "$ cat FILE"): "$ cat FILE" and the lines after it make FILE; a
#                          shardscope command is run (a .ein file it names that no cat made
#                          is the ```ein block before the transcript) and its output (stdout
#                          and stderr, blank lines aside) must be the lines after it, in
#                          any order (the two streams interleave differently on a terminal)
# Other fences (```sh, other ```text) are not checked. Exit 0 when every block holds, 1
# otherwise.
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") # absolute: transcripts run elsewhere
doc=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One file per block, padded to the document's lines; a manifest line per block:
# FILE KIND CODE LINE OPTIONS (LINE: the fence's line in the document).
awk -v dir="$tmp" '
    function pad(n,   s, i) { s = ""; for (i = 1; i < n; ++i) s = s "\n"; return s }
    !inside && /^```ein(-error|-warning)?([ \t]|$)/ {
        inside = 1; ++count
        kind = $1; sub(/^```/, "", kind)
        code = (kind != "ein" && NF >= 2) ? $2 : "-"
        opts = ""; for (k = (kind == "ein") ? 2 : 3; k <= NF; ++k) opts = opts " " $k
        file = sprintf("%s/block-%03d.ein", dir, count)
        printf "%s", pad(NR + 1) > file
        print file, kind, code, NR opts > (dir "/manifest")
        next
    }
    !inside && /^```text[ \t]*$/ { text = 1; first = 1; next }
    text && first {
        first = 0
        if ($0 !~ /^\$ (shardscope|cat) /) { text = 0; skip = 1; next }
        inside = 1; ++count
        file = sprintf("%s/transcript-%03d.txt", dir, count)
        print file, "transcript", (last_ein == "" ? "-" : last_ein), NR - 1 > (dir "/manifest")
    }
    skip && /^```[ \t]*$/ { skip = 0; next }
    skip { next }
    inside && /^```[ \t]*$/ {
        inside = 0; close(file)
        if (kind == "ein" && !text) last_ein = file
        text = 0; kind = ""
        next
    }
    inside { print > file }
    text && /^```[ \t]*$/ { text = 0; next }
    END { if (inside) { print "unclosed fence at the end of the document" > "/dev/stderr"; exit 1 } }
' "$doc" || exit 1
[ -f "$tmp/manifest" ] || { echo "FAIL: no \`\`\`ein blocks in $doc"; exit 1; }

passed=0
failed=0
fail() { # fail LINE KIND WHY OUTPUT_FILE
    failed=$((failed + 1))
    echo "FAIL: $doc:$1: the \`\`\`$2 block $3"
    # its diagnostics (errors and warnings with their source lines), else the start of it
    if grep -qE ': (error|warning): ' "$4"; then
        grep -A3 -E ': (error|warning): ' "$4" | sed 's/^/    /' | head -30
    else
        sed 's/^/    /' "$4" | head -30
    fi
}
# transcript FILE LAST_EIN: runs the transcript's commands in a scratch folder; on a
# mismatch prints why (and leaves the output in $out) and returns 1.
transcript() {
    local work="$tmp/work" steps="$tmp/steps" n cmd name word
    rm -rf "$work" "$steps"
    mkdir -p "$work" "$steps"
    awk -v dir="$steps" '/^\$ / { ++n; f = sprintf("%s/%03d", dir, n); print substr($0, 3) > (f ".cmd"); close(f ".cmd"); printf "" > (f ".out"); next }
                         { print >> (f ".out") }' "$1"
    for n in "$steps"/*.cmd; do
        n=${n%.cmd}
        cmd=$(cat "$n.cmd")
        case $cmd in
        "cat "*)
            name=${cmd#cat }
            cp "$n.out" "$work/$name"
            ;;
        "shardscope "*)
            for word in $cmd; do
                case $word in *.ein)
                    if [ ! -f "$work/$word" ] && [ "$2" != "-" ]; then
                        sed '/./,$!d' "$2" >"$work/$word" # the block, without the padding
                    fi ;;
                esac
            done
            # shellcheck disable=SC2086 # the command's words
            (cd "$work" && "$bin" ${cmd#shardscope }) >"$out" 2>&1
            grep -v '^[[:space:]]*$' "$out" | sort >"$tmp/got"
            grep -v '^[[:space:]]*$' "$n.out" | sort >"$tmp/want"
            if ! cmp -s "$tmp/got" "$tmp/want"; then
                echo "does not show what '$cmd' prints now (missing lines <, new lines >):"
                diff "$tmp/want" "$tmp/got" | grep '^[<>]' | head -20
                : >"$out"
                return 1
            fi
            ;;
        *)
            echo "has a command that is neither cat nor shardscope: $cmd"
            return 1
            ;;
        esac
    done
}

while read -r file kind code line opts; do
    # shellcheck disable=SC2086 # the options are words
    set -- $opts
    out="$tmp/out"
    case $kind in
    ein)
        "$bin" check --werror "$@" "$file" >"$out" 2>&1
        rc=$?
        if [ "$rc" -eq 0 ]; then passed=$((passed + 1)); else fail "$line" "$kind" "does not check cleanly (exit $rc)" "$out"; fi
        ;;
    ein-warning)
        "$bin" check "$@" "$file" >"$out" 2>&1
        rc=$?
        if [ "$code" = "-" ]; then
            fail "$line" "$kind" "names no code (\`\`\`ein-warning CODE)" "$out"
        elif [ "$rc" -ne 0 ]; then
            fail "$line" "$kind" "has errors (exit $rc)" "$out"
        elif ! grep -qE "warning: .*\[$code\]" "$out"; then
            fail "$line" "$kind" "does not warn $code" "$out"
        elif "$bin" check --werror "$@" "$file" >/dev/null 2>&1; then
            fail "$line" "$kind" "passes --werror" "$out"
        else
            passed=$((passed + 1))
        fi
        ;;
    transcript)
        if why=$(transcript "$file" "$code"); then passed=$((passed + 1)); else
            fail "$line" text "$why" "$out"
        fi
        ;;
    ein-error)
        cmd=check
        case $code in G*) cmd=grad ;; esac
        "$bin" "$cmd" "$@" "$file" >"$out" 2>&1
        rc=$?
        if [ "$code" = "-" ]; then
            fail "$line" "$kind" "names no code (\`\`\`ein-error CODE)" "$out"
        elif [ "$rc" -ne 1 ]; then
            fail "$line" "$kind" "exits $rc, not 1 ($cmd)" "$out"
        elif ! grep -qE "error: .*\[$code\]" "$out"; then
            fail "$line" "$kind" "fails, but not with $code ($cmd)" "$out"
        else
            passed=$((passed + 1))
        fi
        ;;
    esac
done <"$tmp/manifest"
echo "$doc: $passed blocks hold, $failed fail"
[ "$failed" -eq 0 ]
