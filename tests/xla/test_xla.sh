#!/usr/bin/env bash
# shardscope's plans against XLA's SPMD partitioner: test_xla.sh SHARDSCOPE SOURCE_DIR
# Runs conformance.py (every case compiled in one python process) with the jax venv's python
# (scripts/setup.sh ensure_jax) on 8 CPU devices. Exit 77 (skipped) only when jax cannot be
# installed: the package index is unreachable, or python3 cannot make a venv.
set -uo pipefail
bin=$1 src=$2
# shellcheck source=../../scripts/setup.sh
source "$src/scripts/setup.sh"
jax_test_python
exec "$JAX_PY" "$src/tests/xla/conformance.py" "$bin"
