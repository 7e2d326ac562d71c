#!/usr/bin/env bash
# Run HERE (Debian 12, with network), before a session on the GPU machine: fetches the Debian
# packages that machine lacks (it has CUDA, NCCL, CMake, ninja and python but no Debian dev
# packages and no network) into .devdeps/debs (git-ignored: carry .devdeps/debs along). There,
# scripts/device_build.sh unpacks them into a private prefix. About 23 MB of .debs.
#   scripts/device_deps.sh          # everything, OpenMPI included (mpi and nccl backends)
#   DEVDEPS_MPI=0 scripts/device_deps.sh   # without OpenMPI (cuda backend only)
set -euo pipefail
cd "$(dirname "$0")/.."
# Header-only and small libraries of the build (pegtl, doctest, CLI11, nlohmann-json),
# OpenBLAS (host kernels and the reference), libedit (the REPL), pkgconf (pkg-config).
packages=(
    tao-pegtl-dev doctest-dev libcli11-dev nlohmann-json3-dev
    libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libopenblas0 libgfortran5
    libquadmath0
    libedit-dev libedit2 libbsd-dev libbsd0 libmd-dev libmd0 libncurses-dev libncurses6
    libncursesw6 libtinfo6
    pkgconf pkgconf-bin libpkgconf3
)
# OpenMPI (the mpi backend, and the nccl backend's bootstrap) and what it loads.
mpi_packages=(
    libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common libhwloc15 libevent-core-2.1-7
    libevent-pthreads-2.1-7 libpmix2 libfabric1 libucx0 libibverbs1 librdmacm1 libnl-3-200
    libnl-route-3-200 libpsm2-2 libpsm-infinipath1 libnuma1 libmunge2 libatomic1
)
[ "${DEVDEPS_MPI:-1}" = 0 ] || packages+=("${mpi_packages[@]}")
mkdir -p .devdeps/debs
cd .devdeps/debs
rm -f ./*.deb
# apt-get download warns when it runs as root outside its sandbox; the files are fine.
apt-get download "${packages[@]}" 2>&1 | grep -v -e '^Get:' -e 'unsandboxed' || true
n=$(ls ./*.deb | wc -l)
[ "$n" -eq "${#packages[@]}" ] || { echo "device_deps: got $n of ${#packages[@]} packages" >&2; exit 1; }
echo "device_deps: $n packages, $(du -sh . | cut -f1) in .devdeps/debs"
echo "device_deps: carry '.devdeps/debs' to the GPU machine and run scripts/device_build.sh there"
