#!/usr/bin/env bash
# Installs what is missing, builds, and runs shardscope. With arguments: `shardscope ARGS`;
# without: the window (`shardscope gui`) where a display exists and the GUI was built, else
# the main job, checking every sample notation file.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/setup.sh
install_packages
build build -DSHARDSCOPE_WERROR=ON >&2
if [ $# -gt 0 ]; then
    exec build/app/shardscope "$@"
fi
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && grep -q '^SHARDSCOPE_GUI:BOOL=ON' build/CMakeCache.txt; then
    exec build/app/shardscope gui
fi
exec build/app/shardscope check samples/
