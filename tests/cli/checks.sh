# The command-line tests' assertions, sourced by tests/cli/test_cli.sh and
# tests/exec/test_gpu_cli.sh. The sourcing script sets $tmp (a scratch folder) and the
# counters passed=0 failed=0, and ends with: echo "$passed passed, $failed failed".

check() { # check NAME EXPECTED_RC COMMAND... ; output in $tmp/out, $tmp/err
    local name=$1 want=$2
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -eq "$want" ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: $name: exit $rc, wanted $want"
        sed 's/^/    /' "$tmp/out" "$tmp/err" | head -20
    fi
}
contains() { # contains NAME FILE TEXT
    if grep -qF -- "$3" "$2"; then passed=$((passed + 1)); else
        failed=$((failed + 1))
        echo "FAIL: $1: '$3' not in $(basename "$2"):"
        sed 's/^/    /' "$2" | head -20
    fi
}
