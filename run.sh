#!/usr/bin/env bash
# Installs what is missing, builds, and runs shardscope. With arguments: `shardscope ARGS`.
# Without arguments, non-interactively (stdin not a terminal: CI, scripts, pipes): the main
# job, checking every sample notation file. Interactively: the window (`shardscope gui`)
# where a display exists and the GUI was built, else the REPL (`shardscope repl`).
set -euo pipefail
cd "$(dirname "$0")"
source scripts/setup.sh
install_packages
build build -DSHARDSCOPE_WERROR=ON >&2
if [ $# -gt 0 ]; then
    exec build/app/shardscope "$@"
fi
if [ ! -t 0 ]; then
    exec build/app/shardscope check samples/
fi
# The interactive entry point, chosen here and only here: a display gets the GUI, a bare
# terminal the REPL.
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && grep -q '^SHARDSCOPE_GUI:BOOL=ON' build/CMakeCache.txt; then
    exec build/app/shardscope gui
fi
exec build/app/shardscope repl
