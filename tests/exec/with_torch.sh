#!/usr/bin/env bash
# with_torch.sh SOURCE_DIR SCRIPT [ARGS...]: run a Python script with the python that has torch
# (SHARDSCOPE_TORCH_PYTHON, else the torch venv, installed once: scripts/setup.sh's
# torch_test_python); exit 77 (skipped, saying why) only where torch cannot be installed (the
# package index is unreachable, or python3 cannot make a venv), exit 1 where installing failed.
src=$1
shift
# shellcheck source=../../scripts/setup.sh
source "$src/scripts/setup.sh"
torch_test_python
exec "$TORCH_PY" "$@"
