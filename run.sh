#!/usr/bin/env bash
# Installs what is missing, builds, and runs shardscope. With arguments: `shardscope ARGS`.
# Without arguments, interactively (stdin a terminal): the REPL (`shardscope repl`).
# Without arguments, non-interactively (stdin not a terminal: CI, scripts, pipes): the main
# job, checking every sample notation file, as before the REPL existed.
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
# The interactive entry point, chosen here and only here. The GUI issue adds, before the REPL:
#   if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then exec build/app/shardscope gui; fi
# so that a display gets the GUI and a bare terminal the REPL.
exec build/app/shardscope repl
