#!/usr/bin/env bash
# The shardscope binary on a machine without MPI, CUDA, cuBLAS, NCCL, OpenGL, GLFW or X11:
# a minimal root (the binary, its plugins, shardscope-gui, and only the libraries that ldd
# lists for the binary itself) entered with chroot (as root) or unshare -r chroot. check,
# fmt, parse, grad, export and render -o x.svg work there; exec --backend mpi, gui and
# render -o x.png fail with a message naming what is missing, and exit 2.
# Usage: test_no_libraries.sh SHARDSCOPE_BINARY REPO_ROOT
set -u
bin=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
# shellcheck source=checks.sh
source "$(dirname "$0")/checks.sh"

# The binary links none of them (ldd lists what the loader would load at start).
ldd "$bin" >"$tmp/ldd"
if grep -Eq 'libmpi|libopen-rte|libcudart|libcublas|libnccl|libGL|libOpenGL|libglfw|libX11|libimgui' "$tmp/ldd"; then
    failed=$((failed + 1))
    echo "FAIL: the binary links a backend's library:"
    sed 's/^/    /' "$tmp/ldd"
else
    passed=$((passed + 1))
fi

jail=$tmp/root
mkdir -p "$jail/opt/shardscope" "$jail/work" "$jail/tmp"
bindir=$(dirname "$bin")
cp "$bin" "$jail/opt/shardscope/shardscope"
for extra in shardscope-gui shardscope-mpi.so shardscope-gpu.so; do
    [ -e "$bindir/$extra" ] && cp "$bindir/$extra" "$jail/opt/shardscope/"
done
# Only the binary's own libraries (and the loader), at their paths.
grep -o '/[^ ]*' "$tmp/ldd" | while read -r lib; do cp -L --parents "$lib" "$jail"; done
cp "$root/samples/megatron_mlp.ein" "$root/samples/placements_2x2.ein" "$jail/work/"

chroot=$(command -v chroot || echo /usr/sbin/chroot)
unshare=$(command -v unshare || echo /usr/bin/unshare)
mkdir -p "$jail/proc"
# Best: a private mount and pid namespace with /proc mounted in the root (the plugins are then
# found next to the binary through /proc/self/exe, and a sanitizer build finds its maps); it
# goes away with the process. Else a plain chroot (root), or one in a user namespace, without
# /proc: the plugins are found through SHARDSCOPE_LIBEXEC_DIR.
env_dir=()
if "$unshare" -m -p -f --mount-proc="$jail/proc" "$chroot" "$jail" /opt/shardscope/shardscope --version >/dev/null 2>&1; then
    enter=("$unshare" -m -p -f --mount-proc="$jail/proc" "$chroot" "$jail")
elif "$unshare" -r -m -p -f --mount-proc="$jail/proc" "$chroot" "$jail" /opt/shardscope/shardscope --version >/dev/null 2>&1; then
    enter=("$unshare" -r -m -p -f --mount-proc="$jail/proc" "$chroot" "$jail")
elif grep -q AddressSanitizer "$bin"; then
    echo "SKIP: a sanitizer build needs /proc, and no mount namespace is possible here"
    exit 77
elif [ "$(id -u)" = 0 ] && "$chroot" "$jail" /opt/shardscope/shardscope --version >/dev/null 2>&1; then
    enter=("$chroot" "$jail")
    env_dir=(SHARDSCOPE_LIBEXEC_DIR=/opt/shardscope)
elif "$unshare" -r "$chroot" "$jail" /opt/shardscope/shardscope --version >/dev/null 2>&1; then
    enter=("$unshare" -r "$chroot" "$jail")
    env_dir=(SHARDSCOPE_LIBEXEC_DIR=/opt/shardscope)
else
    echo "SKIP: cannot chroot here (not root, and no user namespaces)"
    exit 77
fi
echo "entering the root with: ${enter[*]}"
run() { env -i "${env_dir[@]}" ASAN_OPTIONS=detect_leaks=0 "${enter[@]}" /opt/shardscope/shardscope "$@"; }

check "version" 0 run --version
check "check" 0 run check /work/megatron_mlp.ein
contains "check's summary" "$tmp/err" "0 errors"
check "check --json" 0 run check --json /work/placements_2x2.ein
check "fmt --check" 0 run fmt /work/megatron_mlp.ein
check "parse" 0 run parse /work/megatron_mlp.ein
check "grad" 0 run grad /work/megatron_mlp.ein
check "export" 0 run export --to jax /work/megatron_mlp.ein
check "render svg" 0 run render /work/placements_2x2.ein -o /tmp/x.svg
if [ -s "$jail/tmp/x.svg" ]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: render wrote no SVG"; fi
check "repl" 0 run repl <"$jail/work/megatron_mlp.ein"
check "exec --backend mpi" 2 run exec --backend mpi /work/megatron_mlp.ein
contains "exec --backend mpi names libmpi" "$tmp/err" "the MPI libraries cannot be loaded: libmpi"
check "gui" 2 run gui /work/placements_2x2.ein
contains "gui says what is missing" "$tmp/err" "need the OpenGL, GLFW and X11 libraries"
check "render png" 2 run render /work/placements_2x2.ein -o /tmp/x.png
contains "render png points to svg" "$tmp/err" "render FILE -o OUT.svg"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
