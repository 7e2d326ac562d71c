#!/usr/bin/env bash
# Notation where it lives: check, fmt --check/--write and render of Markdown and LaTeX
# documents, with diagnostics at the document's own lines and columns, and directories
# searched for documents that hold notation.
# Usage: test_documents.sh SHARDSCOPE_BINARY REPO_ROOT
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
# shellcheck source=checks.sh
source "$(dirname "$0")/checks.sh"

mkdir -p "$tmp/docs/sub"
cat >"$tmp/docs/design.md" <<'MD'
# TP MLP design

Prose, $inline$ maths, and code that is not notation:

```python
z = x @ W
```

```ein
mesh 4
dim b=8 s=16 d=32 f=64
h_{b s r_0 f} = W^0_{r_0 f d} x_{b s d}
expect none
z_{b s d} = W^1_{d r_0 f} h_{b s r_0 f}
```
MD
cat >"$tmp/docs/sub/paper.tex" <<'TEX'
\documentclass{article}
\begin{document}
Four devices. % $$ in a comment
\begin{align*}
mesh 4 \\
z_{i} &= x_{i k_0} y_{k_0} \nonumber
\end{align*}
Then $a$ inline, and
\begin{equation} w = foo(z_{i}) \end{equation}
\end{document}
TEX
printf '# Physics\n$$ E = m c^2 $$\n' >"$tmp/docs/physics.md"

check "check a Markdown document" 0 "$bin" check -q "$tmp/docs/design.md"
contains "its statements" "$tmp/err" "1 file, 2 statements: 0 errors"
check "check --json of it: statement lines are the document's" 0 "$bin" check --json "$tmp/docs/design.md"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [s["line"] for s in d["files"][0]["statements"]]==[12,14], d' "$tmp/out" &&
    passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: statement lines"; }
check "check a LaTeX paper with an error" 1 "$bin" check -q "$tmp/docs/sub/paper.tex"
# foo is at line 9, column 22 of the paper: '\begin{equation} w = ' is 21 characters.
contains "the error at the paper's line and column" "$tmp/err" "paper.tex:9:22: error: unknown function 'foo' [P108]"
contains "the caret under the paper's own line" "$tmp/err" '\begin{equation} w = foo(z_{i}) \end{equation}'
check "sarif of the paper" 1 "$bin" check --format sarif "$tmp/docs/sub/paper.tex"
contains "sarif region" "$tmp/out" '"startColumn": 22'
check "a directory: .md and .tex with notation, not other maths" 1 "$bin" check -q "$tmp/docs"
contains "two documents found" "$tmp/err" "2 files, "
if grep -q physics "$tmp/err"; then failed=$((failed + 1)); echo "FAIL: physics.md was checked"; else passed=$((passed + 1)); fi
check "a document named explicitly is read whatever it holds" 0 "$bin" parse "$tmp/docs/physics.md"

check "fmt --check of a block not in canonical form" 1 "$bin" fmt --check "$tmp/docs/design.md"
contains "fmt --check names the block's line" "$tmp/out" "design.md:10: the \`\`\`ein block is not in canonical form"
cp "$tmp/docs/design.md" "$tmp/before.md"
check "fmt --write rewrites the block in place" 0 "$bin" fmt --write "$tmp/docs/design.md"
check "then it is canonical" 0 "$bin" fmt --check "$tmp/docs/design.md"
contains "the prose stays" "$tmp/docs/design.md" "Prose, \$inline\$ maths, and code that is not notation:"
contains "other code stays" "$tmp/docs/design.md" "z = x @ W"
if diff "$tmp/before.md" "$tmp/docs/design.md" | grep -q '^[<>] .*[^ ]' &&
    [ "$(diff "$tmp/before.md" "$tmp/docs/design.md" | grep -c '^<')" -le 3 ]; then
    passed=$((passed + 1))
else
    failed=$((failed + 1)); echo "FAIL: fmt --write changed more than the block's statements"
    diff "$tmp/before.md" "$tmp/docs/design.md"
fi
# LaTeX maths in documents: parsed (syntax errors positioned), never rewritten, and said so
# where each environment opens.
cat >"$tmp/maths.md" <<'MD'
# Maths

```ein
mesh 4
```

The product, typeset:
$$ z_{i} = x_{i k_0}   y_{k_0} $$

  \begin{align}
  w_{i}  =  z_{i}
  \end{align}
MD
cp "$tmp/maths.md" "$tmp/maths_before.md"
check "fmt --check of a document with LaTeX maths" 0 "$bin" fmt --check "$tmp/maths.md"
contains "the \$\$ maths is named where it opens" "$tmp/err" "maths.md:8:1: note: \$\$ maths left as written: fmt checks only \`\`\`ein blocks"
contains "the align maths too" "$tmp/err" "maths.md:10:3: note: \\begin{align} maths left as written"
check "fmt --write of it" 0 "$bin" fmt --write "$tmp/maths.md"
contains "--write says so too" "$tmp/err" "maths.md:8:1: note: \$\$ maths left as written: fmt rewrites only"
if cmp -s "$tmp/maths.md" "$tmp/maths_before.md"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: fmt --write changed LaTeX maths"; fi
printf '\\documentclass{article}\n\\begin{document}\n\\begin{equation} w = foo(z_{i}) \\end{equation}\n\\end{document}\n' >"$tmp/bad.tex"
check "fmt --check of a paper whose maths has a syntax error" 1 "$bin" fmt --check "$tmp/bad.tex"
contains "the error at the paper's line and column" "$tmp/err" "bad.tex:3:22: error: unknown function 'foo'"
# `$$` in inline code is prose (bash's PID, a sentence about display maths): no display opens.
cat >"$tmp/pid.md" <<'MD'
# Shell notes

```ein
mesh 4
dim i=8
y_{i} = x_{i}
```

In bash, `$$` is the PID and `echo $$` prints it.
Use `$$ ... $$` for display maths.
MD
check "\$\$ in inline code opens no maths" 0 "$bin" check -q "$tmp/pid.md"
contains "only the block's statement" "$tmp/err" "1 file, 1 statement: 0 errors, 0 warnings"
check "fmt --check of it" 0 "$bin" fmt --check "$tmp/pid.md"
if grep -q "maths left as written" "$tmp/err"; then
    failed=$((failed + 1)); echo "FAIL: fmt saw maths in inline code"; sed 's/^/    /' "$tmp/err"
else passed=$((passed + 1)); fi
# fmt --write of a CRLF document keeps CRLF in the rewritten block: no mixed line endings.
printf '# CRLF

```ein
mesh 4
dim i=8
y_{i}   =   x_{i}
```
prose
' >"$tmp/crlf.md"
check "fmt --check of a CRLF document not in canonical form" 1 "$bin" fmt --check "$tmp/crlf.md"
check "fmt --write of it" 0 "$bin" fmt --write "$tmp/crlf.md"
contains "the statement was rewritten" "$tmp/crlf.md" "y_{i} = x_{i}"
if [ "$(grep -c $'\r$' "$tmp/crlf.md")" -eq "$(wc -l <"$tmp/crlf.md")" ]; then
    passed=$((passed + 1))
else
    failed=$((failed + 1)); echo "FAIL: fmt --write left lines without CRLF"; od -c "$tmp/crlf.md" | head -20
fi
check "then it is canonical" 0 "$bin" fmt --check "$tmp/crlf.md"
check "render of a document" 0 "$bin" render "$tmp/docs/design.md" -o "$tmp/d.svg"
[ -s "$tmp/d.svg" ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: no SVG"; }
# A fence indented with its list item (CommonMark 0.30, 4.5: up to 3 spaces, removed from
# each content line): read without the indentation, written back with it.
cat >"$tmp/li.md" <<'MD'
- item:

  ```ein
  mesh 4
  z = x_{r_0 e} y_{r_0 e}
  ```
- next
MD
cp "$tmp/li.md" "$tmp/li_before.md"
check "fmt --check of a canonical block in a list item" 0 "$bin" fmt --check "$tmp/li.md"
check "fmt --write of it changes nothing" 0 "$bin" fmt --write "$tmp/li.md"
if cmp -s "$tmp/li.md" "$tmp/li_before.md"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: fmt --write changed a canonical indented block"; diff "$tmp/li_before.md" "$tmp/li.md"; fi
cat >"$tmp/li3.md" <<'MD'
1. step

   ~~~ein
     mesh 4

   z   =   x_{r_0 e}    y_{r_0 e}
  expect   all-reduce(0)
   ~~~
2. done
MD
check "fmt --check of a non-canonical block indented 3" 1 "$bin" fmt --check "$tmp/li3.md"
contains "it names the block" "$tmp/out" "li3.md:4: the \`\`\`ein block is not in canonical form"
check "fmt --write of it" 0 "$bin" fmt --write "$tmp/li3.md"
cat >"$tmp/li3_want.md" <<'MD'
1. step

   ~~~ein
   mesh 4

   z = x_{r_0 e} y_{r_0 e}
   expect all-reduce(0)
   ~~~
2. done
MD
if cmp -s "$tmp/li3.md" "$tmp/li3_want.md"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: fmt --write did not keep the block's indentation"; diff "$tmp/li3_want.md" "$tmp/li3.md"; fi
check "then it is canonical" 0 "$bin" fmt --check "$tmp/li3.md"
printf -- '- item:\r\n\r\n  ```ein\r\n  mesh 4\r\n  z   = x_{r_0 e} y_{r_0 e}\r\n  ```\r\n' >"$tmp/li_crlf.md"
check "fmt --write of an indented block in a CRLF document" 0 "$bin" fmt --write "$tmp/li_crlf.md"
printf -- '- item:\r\n\r\n  ```ein\r\n  mesh 4\r\n  z = x_{r_0 e} y_{r_0 e}\r\n  ```\r\n' >"$tmp/li_crlf_want.md"
if cmp -s "$tmp/li_crlf.md" "$tmp/li_crlf_want.md"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: indented CRLF block"; od -c "$tmp/li_crlf.md" | head -20; fi
# check's diagnostics in an indented block point at the document's columns.
printf -- '- item:\n\n  ```ein\n  mesh 4\n  w = foo(x)\n  ```\n' >"$tmp/li_bad.md"
check "check of an error in an indented block" 1 "$bin" check -q "$tmp/li_bad.md"
contains "at the document's line and column" "$tmp/err" "li_bad.md:5:7: error: unknown function 'foo' [P108]"
check "github format of it" 1 "$bin" check --format github "$tmp/li_bad.md"
contains "github column" "$tmp/out" "line=5,col=7"
# Four spaces make an indented code block, not a fence: nothing in it is notation.
cat >"$tmp/code4.md" <<'MD'
# An indented code block

    ```ein
    mesh 4
    w = foo(x)
    ```
MD
cp "$tmp/code4.md" "$tmp/code4_before.md"
check "check ignores a \`\`\`ein indented 4 spaces" 0 "$bin" check -q "$tmp/code4.md"
contains "no statement read" "$tmp/err" "1 file, 0 statements: 0 errors"
check "fmt --check ignores it" 0 "$bin" fmt --check "$tmp/code4.md"
check "fmt --write leaves it" 0 "$bin" fmt --write "$tmp/code4.md"
if cmp -s "$tmp/code4.md" "$tmp/code4_before.md"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: fmt --write changed an indented code block"; fi
check "render finds nothing to draw in it" 2 "$bin" render "$tmp/code4.md" -o "$tmp/c4.svg"
contains "not the code's error" "$tmp/err" "code4.md: the program has no statement to draw"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
