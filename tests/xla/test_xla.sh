#!/usr/bin/env bash
# shardscope's plans against XLA's SPMD partitioner: test_xla.sh SHARDSCOPE SOURCE_DIR
# Runs conformance.py (every case compiled in one python process) with the jax venv's python
# (scripts/setup.sh ensure_jax) on 8 CPU devices. Exit 77 (skipped) only when jax cannot be
# installed: the package index is unreachable, or python3 cannot make a venv.
set -uo pipefail
bin=$1 src=$2
# shellcheck source=../../scripts/setup.sh
source "$src/scripts/setup.sh"
py=$(ensure_jax)
case $? in
0) ;;
1) echo "SKIPPED: $(cat "$SHARDSCOPE_JAX_VENV/unavailable")"; exit 77 ;;
*) echo "FAIL: jax could not be installed in $SHARDSCOPE_JAX_VENV (see above)"; exit 1 ;;
esac
export XLA_FLAGS=--xla_force_host_platform_device_count=8 JAX_PLATFORMS=cpu
exec "$py" "$src/tests/xla/conformance.py" "$bin"
