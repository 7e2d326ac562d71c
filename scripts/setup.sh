# Shared by run.sh and test.sh: install what is missing (Debian 12 packages), then build.
# Sourced, not run.

# Debian packages the build and the tests need. Later features add theirs here.
SHARDSCOPE_PACKAGES=(
    cmake ninja-build g++ pkg-config python3 python3-venv python3-jsonschema
    tao-pegtl-dev doctest-dev libcli11-dev nlohmann-json3-dev
    clang libclang-rt-14-dev valgrind
    libopenblas-dev openmpi-bin libopenmpi-dev
    libedit-dev tmux libmimalloc-dev
    libimgui-dev libstb-dev libglfw3-dev libgl-dev libgl1-mesa-dri libglx-mesa0
    fonts-dejavu-core xvfb xauth
)

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

install_packages() {
    local missing=()
    for p in "${SHARDSCOPE_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# build DIR [CMAKE_ARGS...]: configure once, then incremental ninja builds (of
# NINJA_TARGETS when set).
build() {
    local dir=$1
    shift
    if [ ! -f "$dir/build.ninja" ]; then
        say "configuring $dir"
        cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
    fi
    say "building $dir"
    # ninja's own status: under pipefail a `|| true` would hide a failed build (PIPESTATUS
    # then holds true's), and grep fails alone when it filters every line.
    local rc=0
    ninja -C "$dir" ${NINJA_TARGETS:-} | grep -v '^ninja: no work to do' || rc=${PIPESTATUS[0]}
    return "$rc"
}

# ensure_venv NAME VENV IMPORT PACKAGES...: a virtual environment in VENV whose python imports
# IMPORT, made once (Debian's python refuses pip installs outside a venv) by pip-installing
# PACKAGES. Prints the python. A python3 that imports IMPORT already (the GPU machine's) needs
# no venv and no network. When pip cannot reach the package index, or python3 cannot make a
# venv, says why in $VENV/unavailable and returns 1 (the tests then skip with that reason); any
# other failure prints pip's log on stderr and returns 2 (the tests then fail).
ensure_venv() {
    local name=$1 venv=$2 import=$3 py
    shift 3
    py=$venv/bin/python3
    if [ -x "$py" ] && "$py" -c "import $import" 2>/dev/null; then
        echo "$py"
        return 0
    fi
    if python3 -c "import $import" 2>/dev/null; then
        command -v python3
        return 0
    fi
    mkdir -p "$venv"
    local made
    if ! "$py" -m pip --version >/dev/null 2>&1 &&
        ! made=$(python3 -m venv --clear "$venv" 2>&1); then
        # No venv module with pip (python3-venv): nothing to install it into.
        echo "$name is not installed and python3 cannot make a venv ($(grep -m1 -iE 'ensurepip|No module|error' <<<"$made"))" >"$venv/unavailable"
        return 1
    fi
    local log=$venv/pip.log
    if "$py" -m pip install --disable-pip-version-check -q "$@" >"$log" 2>&1; then
        rm -f "$venv/unavailable"
        echo "$py"
        return 0
    fi
    if grep -qiE "Temporary failure in name resolution|Failed to establish a new connection|Network is unreachable|Max retries exceeded|ConnectTimeout|ReadTimeout|ProxyError|Name or service not known" "$log"; then
        { echo "$name cannot be installed: the package index is unreachable (pip: $(grep -m1 -iE 'error|warning' "$log"))"; } >"$venv/unavailable"
        return 1
    fi
    cat "$log" >&2
    return 2
}

# ensure_jax: jax (CPU) for the exported JAX scripts' test and the XLA conformance test.
SHARDSCOPE_JAX_VENV=${SHARDSCOPE_JAX_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/shardscope/jax-venv}
ensure_jax() { ensure_venv jax "$SHARDSCOPE_JAX_VENV" jax "jax[cpu]"; }

# ensure_torch: torch (PyPI's wheel, with its CUDA libraries: about 5 GB, a minute here) for
# the exported torch scripts' test and the DTensor conformance test, which run on the CPU
# with gloo.
SHARDSCOPE_TORCH_VENV=${SHARDSCOPE_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/shardscope/torch-venv}
ensure_torch() { ensure_venv torch "$SHARDSCOPE_TORCH_VENV" torch.distributed torch==2.15.0 numpy; }

# For a test that runs jax: sets JAX_PY to the jax venv's python and XLA_FLAGS to 8 CPU
# devices, or ends the test: exit 77 (skipped, saying why) where jax cannot be installed,
# exit 1 where installing it failed.
jax_test_python() {
    JAX_PY=$(ensure_jax)
    case $? in
    0) ;;
    1) echo "SKIPPED: $(cat "$SHARDSCOPE_JAX_VENV/unavailable")"; exit 77 ;;
    *) echo "FAIL: jax could not be installed in $SHARDSCOPE_JAX_VENV (see above)"; exit 1 ;;
    esac
    export XLA_FLAGS=--xla_force_host_platform_device_count=8 JAX_PLATFORMS=cpu
}

# torch_python: the python whose torch runs the exported torch scripts and the DTensor
# conformance test: SHARDSCOPE_TORCH_PYTHON if set, else ensure_torch's (installed once).
# Prints the python and returns 0; or prints why there is none and returns 1 (the test skips:
# the package index is unreachable, or no venv can be made) or 2 (the test fails: installing
# failed, or this torch has no DTensor or gloo).
torch_python() {
    local py err rc=0
    if [ -n "${SHARDSCOPE_TORCH_PYTHON:-}" ]; then
        py=$SHARDSCOPE_TORCH_PYTHON
        if ! command -v "$py" >/dev/null; then
            echo "SHARDSCOPE_TORCH_PYTHON=$py does not exist"
            return 2
        fi
    else
        py=$(ensure_torch) || rc=$?
        if [ "$rc" -eq 1 ]; then
            cat "$SHARDSCOPE_TORCH_VENV/unavailable"
            return 1
        elif [ "$rc" -ne 0 ]; then
            echo "torch could not be installed in $SHARDSCOPE_TORCH_VENV (pip's log above)"
            return 2
        fi
    fi
    if ! err=$("$py" -c 'import torch.distributed as d
from torch.distributed.tensor import DTensor
assert d.is_available() and d.is_gloo_available(), "torch.distributed has no gloo"' 2>&1); then
        echo "torch is not usable from $py ($(printf '%s\n' "$err" | tail -1))"
        return 2
    fi
    echo "$py"
}

# For a test that runs torch: sets TORCH_PY to torch_python's python, or ends the test as
# jax_test_python does: exit 77 (skipped, saying why) where torch cannot be installed, exit 1
# where installing it failed or it cannot be used.
torch_test_python() {
    TORCH_PY=$(torch_python)
    case $? in
    0) ;;
    1) echo "SKIPPED: $TORCH_PY"; exit 77 ;;
    *) echo "FAIL: $TORCH_PY"; exit 1 ;;
    esac
}
