# Shared by run.sh and test.sh: install what is missing (Debian 12 packages), then build.
# Sourced, not run.

# Debian packages the build and the tests need. Later features add theirs here.
SHARDSCOPE_PACKAGES=(
    cmake ninja-build g++ pkg-config python3
    tao-pegtl-dev doctest-dev libcli11-dev nlohmann-json3-dev libfmt-dev
    clang libclang-rt-14-dev valgrind
    libopenblas-dev openmpi-bin libopenmpi-dev
    libedit-dev tmux
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
    ninja -C "$dir" ${NINJA_TARGETS:-} | grep -v '^ninja: no work to do' || true
    [ "${PIPESTATUS[0]}" -eq 0 ]
}
