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
# Other fences (```text, ```sh) are not checked. Exit 0 when every block holds, 1 otherwise.
set -u
bin=$1
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
    inside && /^```[ \t]*$/ { inside = 0; close(file); next }
    inside { print > file }
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
