#!/usr/bin/env bash
# with_torch.sh SOURCE_DIR SCRIPT [ARGS...]: run a Python script with the python that has torch
# (SHARDSCOPE_TORCH_PYTHON, else the torch venv: scripts/setup.sh's torch_python); exit 77
# (skipped, saying why) where there is none. Never installs torch.
src=$1
shift
# shellcheck source=../../scripts/setup.sh
source "$src/scripts/setup.sh"
py=$(torch_python) || { echo "SKIPPED: $py"; exit 77; }
exec "$py" "$@"
