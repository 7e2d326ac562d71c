#!/usr/bin/env bash
# Runs a command under a virtual X display (Xvfb, Mesa's software OpenGL). Without xvfb-run
# the test is skipped (exit 77, ctest's SKIP_RETURN_CODE), saying why.
if ! command -v xvfb-run >/dev/null 2>&1; then
    echo "SKIP: xvfb-run is not installed (apt-get install xvfb xauth; scripts/setup.sh does)"
    exit 77
fi
# Mesa's llvmpipe, whatever the machine has.
export LIBGL_ALWAYS_SOFTWARE=1
exec xvfb-run -a -s "-screen 0 1600x1000x24" "$@"
