#!/usr/bin/env bash
# Run THERE, on the GPU machine (CUDA toolkit, NCCL, CMake, ninja, python3; no Debian dev
# packages, no network), from the repository root with .devdeps carried along (made here by
# scripts/device_deps.sh): unpacks the .debs into .devdeps/prefix, configures build-gpu
# (no GUI, CUDA on, Hopper), builds, runs the GPU tests (ctest -L gpu) and the host tests of
# the GPU backends, then the GPU benchmarks. Logs and a summary go to $OUT when set (the device
# tool brings them back: at most 8 files, and this writes 8 at most), else build-gpu/logs.
#   scripts/device_build.sh                  # build, GPU tests, benchmarks
#   scripts/device_build.sh build            # one phase at a time (each fits a 10-minute
#   scripts/device_build.sh test             #   command; the build folder is kept while the
#   scripts/device_build.sh bench            #   machine stays warm, else test/bench build first)
#   scripts/device_build.sh build test       # the first call's safest form: one command
#   scripts/device_build.sh test --all-tests # the GPU tests and then the whole ctest suite
# For trying the flow elsewhere: DEVICE_BUILD_DIR (default build-gpu), DEVICE_TARGETS (ninja
# targets, default all), DEVICE_PREFIX_MPI=1 (use the unpacked OpenMPI even if mpicc exists).
# DEVICE_TIME_LIMIT (seconds, default 570): the tests and benchmarks stop by then, so that a
# hang still leaves its logs and summary within the device tool's 10-minute command.
# Exit status: 0 when the build and every test run passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
build=${DEVICE_BUILD_DIR:-$root/build-gpu}
logs=${OUT:-$build/logs}
mkdir -p "$logs"
summary=$logs/summary.txt
: >"$summary"
say() { echo "==> $*" | tee -a "$summary" >&2; }
arch=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
arch=${arch/x86_64-pc-linux-gnu/x86_64-linux-gnu}
P=$root/.devdeps/prefix
status=0
phases=() all_tests=0
for a in "$@"; do
    case $a in
    build | test | bench) phases+=("$a") ;;
    --all-tests) all_tests=1 ;;
    *) echo "usage: device_build.sh [build] [test] [bench] [--all-tests]" >&2; exit 2 ;;
    esac
done
[ ${#phases[@]} -gt 0 ] || phases=(build test bench)
want() { [[ " ${phases[*]} " == *" $1 "* ]]; }
# The device machine goes back 30 s after a call, and a fresh one has no build folder: then
# test and bench build first (about a minute or two on its 16 cores).
if ! want build && [ ! -f "$build/build.ninja" ]; then
    phases=(build "${phases[@]}")
    say "no $build/build.ninja (a fresh machine?): building first"
fi

# 1. The Debian packages, unpacked into a private prefix. Their .pc files name /usr: point them
# at the prefix. Runtime libraries the system lacks are linked into $P/runtime, the only
# folder added to LD_LIBRARY_PATH (so that the system's own libraries are never shadowed).
if want build && ls .devdeps/debs/*.deb >/dev/null 2>&1 || { [ ! -d "$P" ] && ls .devdeps/debs/*.deb >/dev/null 2>&1; }; then
    rm -rf "$P"
    mkdir -p "$P/runtime"
    for d in .devdeps/debs/*.deb; do dpkg-deb -x "$d" "$P" || { say "cannot unpack $d"; exit 2; }; done
    find "$P" -name '*.pc' -exec sed -i -e "s|=/usr|=$P/usr|g" -e "s| -I/usr| -I$P/usr|g" \
        -e "s| -L/usr| -L$P/usr|g" {} +
    # Most CMake package files find their prefix from where they lie; doctest's names /usr.
    find "$P" -name '*.cmake' -exec sed -i "s|set(_IMPORT_PREFIX \"/usr\")|set(_IMPORT_PREFIX \"$P/usr\")|" {} +
    for dir in "$P/usr/lib/$arch" "$P/lib/$arch" "$P/usr/lib/$arch/openblas-pthread" \
        "$P/usr/lib/$arch/openmpi/lib" "$P/usr/lib/$arch/pmix2/lib"; do
        [ -d "$dir" ] || continue
        for so in "$dir"/*.so.*; do
            [ -e "$so" ] || continue
            name=$(basename "$so")
            ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$name " && continue
            ln -sf "$so" "$P/runtime/$name"
        done
    done
    # What Debian's alternatives would link (openblas.pc is found in openblas-pthread/ through
    # PKG_CONFIG_PATH below): mpirun and mpiexec, which the command-line tests look for.
    for t in mpirun mpiexec; do
        [ -e "$P/usr/bin/$t.openmpi" ] && ln -sf "$t.openmpi" "$P/usr/bin/$t"
    done
    say "unpacked $(find .devdeps/debs -name "*.deb" | wc -l) packages into .devdeps/prefix"
elif [ ! -d "$P" ]; then
    say "no .devdeps/debs (run scripts/device_deps.sh where there is network): using the system's packages"
fi
export PKG_CONFIG_PATH="$P/usr/lib/$arch/pkgconfig:$P/usr/share/pkgconfig:$P/usr/lib/$arch/openblas-pthread/pkgconfig:$P/usr/lib/$arch/openmpi/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$P/runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="/usr/local/cuda/bin:$PATH"
pkgconfig=$(command -v pkg-config || true)
[ -n "$pkgconfig" ] || pkgconfig=$P/usr/bin/pkgconf

# 2. NCCL: the toolkit's, the system's, or the pip package's (nvidia-nccl-cu13).
nccl_root=""
for d in /usr/local/cuda /usr/local /usr; do
    [ -f "$d/include/nccl.h" ] && { nccl_root=$d; break; }
done
pip_nccl=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null || true)
if [ -n "$pip_nccl" ] && [ -f "$pip_nccl/include/nccl.h" ]; then
    [ -n "$nccl_root" ] || nccl_root=$pip_nccl
    export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$pip_nccl/lib"
fi
say "NCCL: ${nccl_root:-not found}"

# 3. OpenMPI from the prefix (relocated by OPAL_PREFIX), unless the system has mpicc.
mpi_args=()
if { ! command -v mpicc >/dev/null || [ "${DEVICE_PREFIX_MPI:-0}" = 1 ]; } &&
    [ -f "$P/usr/lib/$arch/openmpi/include/mpi.h" ]; then
    export OPAL_PREFIX=$P/usr PMIX_INSTALL_PREFIX=$P/usr/lib/$arch/pmix2
    export PATH="$PATH:$P/usr/bin"
    mpi_args=(-DMPI_SKIP_COMPILER_WRAPPER=ON -DMPI_C_HEADER_DIR="$P/usr/lib/$arch/openmpi/include"
        -DMPI_C_LIB_NAMES=mpi -DMPI_mpi_LIBRARY="$P/usr/lib/$arch/openmpi/lib/libmpi.so"
        -DMPIEXEC_EXECUTABLE="$P/usr/bin/mpirun.openmpi")
    say "MPI: OpenMPI from .devdeps (OPAL_PREFIX=$OPAL_PREFIX)"
fi
# One node: mpirun starts its ranks itself (plm isolated) instead of failing for want of an
# ssh or rsh client, which the GPU machine may lack; root is allowed (containers).
export OMPI_MCA_plm=${OMPI_MCA_plm:-isolated}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# 4. Configure and build: the executor and command line without the GUI, CUDA required.
if command -v nvidia-smi >/dev/null; then nvidia-smi -L >"$logs/gpus.txt" 2>&1; else echo "no nvidia-smi" >"$logs/gpus.txt"; fi
gpus_listed=$(grep -c '^GPU ' "$logs/gpus.txt")
say "GPUs: $gpus_listed ($(head -1 "$logs/gpus.txt"))"
# Where nvidia-smi lists a GPU, a skipped GPU test is a failure: the GPU is there but this
# build cannot use it (a driver older than the toolkit, say).
skipped_on_gpu() { # skipped_on_gpu WHAT
    [ "$gpus_listed" -gt 0 ] || return 0
    status=1; say "$1 skipped although nvidia-smi lists a GPU: see gpus.txt and the log"
}
if want build; then
    if ! cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHARDSCOPE_GUI=OFF \
        -DSHARDSCOPE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
        -DCMAKE_PREFIX_PATH="$P/usr" -DPKG_CONFIG_EXECUTABLE="$pkgconfig" \
        -DPython3_EXECUTABLE="$(command -v python3)" \
        ${nccl_root:+-DNCCL_ROOT="$nccl_root"} "${mpi_args[@]}" >"$logs/configure.log" 2>&1; then
        say "configure FAILED (configure.log)"; tail -30 "$logs/configure.log" >&2; exit 2
    fi
    grep -E "shardscope (CUDA|nccl|GUI)" "$logs/configure.log" | tee -a "$summary" >&2
    # shellcheck disable=SC2086 # DEVICE_TARGETS is a list
    if ! ninja -C "$build" -j "$(nproc)" ${DEVICE_TARGETS:-} >"$logs/build.log" 2>&1; then
        say "build FAILED (build.log)"; grep -E -B2 -A12 -m3 "error:|FAILED:" "$logs/build.log" >&2; exit 2
    fi
    say "built"
fi

# 5. Tests: the GPU ones, the host side of the GPU backends, then (--all-tests) everything.
left() { echo $((${DEVICE_TIME_LIMIT:-570} - SECONDS)); }
run_ctest() { # run_ctest NAME CTEST_ARGS...
    local name=$1 rc; shift
    if [ "$(left)" -lt 10 ]; then
        status=1; say "$name not run: out of time (DEVICE_TIME_LIMIT)"; return
    fi
    timeout -k 5 "$(left)" ctest --test-dir "$build" --output-on-failure "$@" >"$logs/$name.log" 2>&1
    rc=$?
    if [ $rc = 0 ]; then
        say "$name: $(grep -E 'tests passed' "$logs/$name.log" | tail -1)"
    elif [ $rc = 124 ] || [ $rc = 137 ]; then
        status=1; say "$name TIMED OUT (DEVICE_TIME_LIMIT) in: $(grep -E '^ *Start ' "$logs/$name.log" | tail -1) ($name.log)"
    else
        status=1; say "$name FAILED: $(grep -E 'tests passed' "$logs/$name.log" | tail -1) ($name.log)"
    fi
    local skips
    skips=$(grep -E "\(Skipped\)|\*\*\*Skipped|SKIPPED" "$logs/$name.log")
    if [ -n "$skips" ]; then
        printf '%s\n' "$skips" | head -5 | tee -a "$summary" >&2
        [ "$name" = ctest_gpu ] && skipped_on_gpu "GPU tests"
    fi
}
if want test; then
    run_ctest ctest_gpu -V -L '^gpu$'
    run_ctest ctest_gpu_host -L '^gpu-host$'
    [ "$all_tests" = 1 ] && run_ctest ctest_all -j "$(nproc)"
fi

# 6. Benchmarks.
if want bench; then
    # The targets are for virtual ranks on one GPU.
    CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} timeout -k 5 "$(left)" \
        "$build/tests/bench/bench_cuda" all "${BENCH_REPEATS:-5}" >"$logs/bench_cuda.txt" 2>&1
    rc=$?
    case $rc in
    0) say "bench_cuda: bench_cuda.txt" ;;
    77) say "bench_cuda skipped: $(head -1 "$logs/bench_cuda.txt")"; skipped_on_gpu bench_cuda ;;
    124 | 137) status=1; say "bench_cuda TIMED OUT (DEVICE_TIME_LIMIT; BENCH_REPEATS=1 is shorter)" ;;
    *) status=1; say "bench_cuda FAILED, exit $rc (bench_cuda.txt)" ;;
    esac
    cat "$logs/bench_cuda.txt" >>"$summary"
fi
say "done (status $status)"
exit $status
