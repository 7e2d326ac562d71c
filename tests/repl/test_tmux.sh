#!/usr/bin/env bash
# The REPL on a real terminal, under tmux (a private server): the prompt, a statement, Tab
# completion of a tensor name (in a command and in notation) and of a command, a `\`
# continuation line, Ctrl-C cancelling a half-typed line, Ctrl-D leaving with exit 0, and
# history: after a restart, Up recalls the lines of the first session. HOME is a temporary
# directory, so ~/.shardscope_history is the test's own. Every wait polls capture-pane with a
# bound (no fixed sleeps); the whole test takes a few seconds.
# Usage: test_tmux.sh SHARDSCOPE     (exit 77, skipped, when tmux is missing)
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
command -v tmux >/dev/null || { echo "tmux is not installed: skipped"; exit 77; }
work=$(mktemp -d)
sock="$work/tmux.sock"
t() { tmux -S "$sock" "$@"; }
cleanup() {
    t kill-server 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    echo "---- screen ----" >&2
    screen >&2
    exit 1
}
screen() { t capture-pane -p -J -S - -t repl 2>/dev/null || true; }
# wait_for TEXT [SECONDS]: until the screen shows TEXT (fixed string).
wait_for() {
    local deadline=$((SECONDS + ${2:-5}))
    while ! screen | grep -qF -- "$1"; do
        [ $SECONDS -lt $deadline ] || fail "waited for '$1'"
        sleep 0.05
    done
}
# wait_for_line LINE: until the screen shows LINE as a whole line.
wait_for_line() {
    local deadline=$((SECONDS + 5))
    while ! screen | sed -e 's/ *$//' | grep -qxF -- "$1"; do
        [ $SECONDS -lt $deadline ] || fail "waited for the line '$1'"
        sleep 0.05
    done
}
# wait_prompt: until the last line is a fresh prompt: libedit has the terminal in its own mode
# then (keys sent earlier reach a terminal still in canonical mode, where Ctrl-D would be
# taken as end of input by the line discipline and lost when libedit switches modes).
wait_prompt() {
    local deadline=$((SECONDS + 5))
    while [ "$(screen | sed -e 's/ *$//' -e '/^$/d' | tail -n 1)" != "ein>" ]; do
        [ $SECONDS -lt $deadline ] || fail "waited for a fresh prompt"
        sleep 0.05
    done
}
# wait_exit: until the REPL has left; its exit code is then in $work/rc.
wait_exit() {
    local deadline=$((SECONDS + 5))
    while [ ! -s "$work/rc" ]; do
        [ $SECONDS -lt $deadline ] || fail "the REPL did not leave"
        sleep 0.05
    done
}
start() {
    rm -f "$work/rc"
    t -f /dev/null new-session -d -s repl -x 120 -y 60 \
        "cd '$work' && HOME='$work' TERM=xterm '$bin' repl; echo \$? > '$work/rc'; sleep 60"
    wait_prompt
}

# ---- the first session ----
start
t send-keys -t repl 'mesh 2x2' Enter
wait_for "(a mesh of 4 devices)"
wait_prompt
t send-keys -t repl 'dim a=4 b=4' Enter
wait_for_line "dim a=4 b=4"
wait_prompt
t send-keys -t repl 'weight_{a_0 b} = x_{a_0 b}' Enter
wait_for "repl:3: weight_{a₀ b} = x_{a₀ b}"
wait_prompt

# Tab completes a tensor name after :show, and in notation.
t send-keys -t repl ':show we' Tab
wait_for ":show weight"
t send-keys -t repl Enter
wait_for "now: (S(0), R), local 2×4 of 4×4"
wait_prompt
t send-keys -t repl 'y_{a b} = wei' Tab
wait_for "y_{a b} = weight"
t send-keys -t repl '_{a_0 b}' Enter
wait_for "repl:4: y_{ab} = weight_{a₀ b}"
wait_prompt

# Tab completes a command.
t send-keys -t repl ':vi' Tab
wait_for ":viz "
t send-keys -t repl 'weight' Enter
wait_for "rows: a_0 (4, 2 tiles)"
wait_prompt

# A continuation line: the prompt changes, the statement is checked when it ends.
t send-keys -t repl 'z_{a b} = \' Enter
wait_for "...> "
t send-keys -t repl 'x_{a_0 b}' Enter
wait_for "repl:5: z_{ab} = x_{a₀ b}"
wait_prompt

# Ctrl-C drops the half-typed line; the session goes on.
t send-keys -t repl 'q_{a} = half typed' C-c
wait_for "^C"
wait_prompt
t send-keys -t repl ':tensors' Enter
wait_for "result   z "
wait_prompt
screen | grep -qF "not added to the session" && fail "the cancelled line was evaluated"

# Ctrl-D leaves with exit 0.
t send-keys -t repl C-d
wait_exit
[ "$(cat "$work/rc")" = 0 ] || fail "exit code $(cat "$work/rc") after Ctrl-D"
[ -s "$work/.shardscope_history" ] || fail "no ~/.shardscope_history"
t kill-session -t repl

# ---- a second session: Up recalls the history of the first ----
start
t send-keys -t repl Up
wait_for "ein> :tensors"
t send-keys -t repl Up
wait_for "ein> z_{a b} = x_{a_0 b}"
# Enter runs it: this session has no mesh, so axis 0 is an error, and the session goes on.
t send-keys -t repl Enter
wait_for "repl:1:16: error: mesh axis '0' is used but no mesh is declared"
wait_prompt
t send-keys -t repl ':quit' Enter
wait_exit
[ "$(cat "$work/rc")" = 0 ] || fail "exit code $(cat "$work/rc") after :quit"
echo "repl under tmux: prompt, completion, continuation, Ctrl-C, Ctrl-D, history: OK"
