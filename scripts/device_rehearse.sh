#!/usr/bin/env bash
# Rehearses the GPU machine's flow (scripts/device_build.sh build, then test --all-tests) in a
# bare Debian 12 (or Ubuntu 24.04) root: minbase plus gcc, g++, make, python3 and pip's cmake
# and ninja, the host's /usr/local/cuda read-only, no network, no Debian dev packages, no GPU
# (the GPU tests must skip, the host tests pass). Run HERE as root (debootstrap, chroot,
# mounts), with network for the first run; never run by test.sh or CI. The root is kept and
# reused; the repository is cloned afresh from HEAD (commit first), with .devdeps/debs
# (scripts/device_deps.sh).
#   scripts/device_rehearse.sh                    # build + test --all-tests, logs in the root's /out/N
#   scripts/device_rehearse.sh "test --all-tests" # each argument one device_build.sh command
#   REHEARSE_PIP_NCCL=1 scripts/device_rehearse.sh # NCCL from pip's nvidia-nccl-cu13 only:
#                                                  #   /usr/local/cuda without its nccl files
#   REHEARSE_JAX=1 scripts/device_rehearse.sh      # jax in the system python, as the GPU
#                                                  #   machine has (the exported-JAX test runs)
#   REHEARSE_SUITE=noble REHEARSE_ROOT=/srv/noble scripts/device_rehearse.sh
#                                                  # Ubuntu 24.04 (GCC 13, Python 3.12) instead
# REHEARSE_ROOT (default /srv/bare), REHEARSE_CUDA (default /usr/local/cuda).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
R=${REHEARSE_ROOT:-/srv/bare}
cuda=$(readlink -f "${REHEARSE_CUDA:-/usr/local/cuda}")
pip_nccl=${REHEARSE_PIP_NCCL:-0}
[ "$(id -u)" = 0 ] || { echo "device_rehearse: run as root" >&2; exit 2; }
[ -x "$cuda/bin/nvcc" ] || { echo "device_rehearse: no nvcc in $cuda" >&2; exit 2; }
inroot() { chroot "$R" env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
    LANG=C.UTF-8 bash -c "$1"; }

# 1. The root, once: minbase, the compilers and python from Debian, cmake and ninja from pip
# (as on the GPU machine), NCCL from pip when asked. pip gets the host's CA bundle (proxies).
suite=${REHEARSE_SUITE:-bookworm}
if [ ! -x "$R/usr/bin/g++" ]; then
    command -v debootstrap >/dev/null || { apt-get update -q && apt-get install -y -q debootstrap; }
    if [ "$suite" = noble ]; then
        # Debian's debootstrap has no noble script (jammy's serves) nor Ubuntu's keyring.
        ubuntu=http://archive.ubuntu.com/ubuntu
        debootstrap --no-check-gpg --variant=minbase noble "$R" "$ubuntu" \
            /usr/share/debootstrap/scripts/jammy
        echo "deb $ubuntu noble main universe" >"$R/etc/apt/sources.list"
    else
        mirror=$(grep -h -m1 -oE 'https?://[^ ]*debian/?' /etc/apt/sources.list.d/*.sources \
            /etc/apt/sources.list 2>/dev/null | head -1 || true)
        debootstrap --variant=minbase "$suite" "$R" "${mirror:-http://deb.debian.org/debian}"
    fi
    cp /etc/resolv.conf "$R/etc/resolv.conf"
    inroot 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends gcc g++ make python3 python3-pip'
fi
cp /etc/ssl/certs/ca-certificates.crt "$R/root/hostca.crt"
pipi() { inroot "pip install --cert /root/hostca.crt --break-system-packages -q $*"; }
inroot 'command -v cmake && command -v ninja' >/dev/null || pipi cmake ninja
if [ "$pip_nccl" = 1 ]; then
    inroot 'python3 -c "import nvidia.nccl"' 2>/dev/null || pipi nvidia-nccl-cu13
fi
if [ "${REHEARSE_JAX:-0}" = 1 ]; then
    inroot 'python3 -c "import jax"' 2>/dev/null || pipi '"jax[cpu]"'
fi

# 2. Mounts (undone on exit): /proc, /sys read-only (hwloc reads the CPU topology), /dev, the
# toolkit read-only at /usr/local/cuda (with REHEARSE_PIP_NCCL=1 a hard-linked copy without
# NCCL's files).
mounts=()
# shellcheck disable=SC2317 # run by the trap
cleanup() {
    local i
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
        umount -R "${mounts[i]}" 2>/dev/null || { sleep 2; umount -R -l "${mounts[i]}"; } || true
    done
}
trap cleanup EXIT
mnt() { # mnt TARGET MOUNT-ARGS...
    local target=$1; shift
    mkdir -p "$target"
    mount "$@" "$target"
    mounts+=("$target")
}
mnt "$R/proc" -t proc proc
mnt "$R/sys" -t sysfs -o ro sysfs
mnt "$R/dev" --rbind /dev
toolkit=$cuda
if [ "$pip_nccl" = 1 ]; then
    toolkit=$R.cuda-nonccl
    if [ ! -d "$toolkit" ]; then
        cp -al "$cuda" "$toolkit"
        find "$toolkit" -mindepth 1 -iname '*nccl*' -prune -exec rm -rf {} +
    fi
fi
mnt "$R/usr/local/cuda" --bind "$toolkit"
mount -o remount,bind,ro "$R/usr/local/cuda"

# 3. The repository: HEAD and the .debs (fetched here if missing).
[ -n "$(ls "$repo"/.devdeps/debs/*.deb 2>/dev/null)" ] || "$repo/scripts/device_deps.sh"
rm -rf "$R/work/shardscope" "$R/out"
mkdir -p "$R/work" "$R/out"
git clone -q "$repo" "$R/work/shardscope"
mkdir -p "$R/work/shardscope/.devdeps"
cp -r "$repo/.devdeps/debs" "$R/work/shardscope/.devdeps/"
echo "device_rehearse: .devdeps/debs $(du -sh "$repo/.devdeps/debs" | cut -f1)," \
    "cmake $(inroot 'cmake --version' | head -1 | cut -d' ' -f3), $(inroot 'gcc --version' | head -1)"

# 4. The phases, as the device tool runs them: no network (a fresh network namespace with only
# loopback up), a clean environment, OUT set; niced, on this machine's cores. No time limit by
# default (DEVICE_TIME_LIMIT is sized for the GPU machine's 16 cores; a test or bench phase
# that builds first takes longer here): REHEARSE_TIME_LIMIT sets one.
status=0 i=0
[ $# -gt 0 ] || set -- build "test --all-tests"
for phase in "$@"; do
    i=$((i + 1))
    mkdir -p "$R/out/$i"
    echo "device_rehearse: device_build.sh $phase (OUT=$R/out/$i)"
    start=$SECONDS
    # shellcheck disable=SC2016 # expanded by the inner shells
    unshare -n bash -c 'ip link set lo up 2>/dev/null || true
        exec chroot "$0" env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
            LANG=C.UTF-8 OUT="/out/$3" DEVICE_TIME_LIMIT="$2" \
            bash -c "cd /work/shardscope && nice -n 19 scripts/device_build.sh $1"' \
        "$R" "$phase" "${REHEARSE_TIME_LIMIT:-86400}" "$i" || status=$?
    echo "device_rehearse: $phase: exit $status, $((SECONDS - start)) s"
    # The device tool brings back at most 8 files from OUT.
    n=$(find "$R/out/$i" -type f | wc -l)
    [ "$n" -le 8 ] || { echo "device_rehearse: $n files in OUT, the device tool brings back 8"; status=1; }
    [ "$status" = 0 ] || break
done
echo "device_rehearse: logs and summary.txt in $R/out/1..$i"
exit "$status"
