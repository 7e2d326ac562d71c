#!/usr/bin/env bash
# Start-up cost of the binary: `shardscope check` of a one-statement file, wall time and
# maximum resident set size over RUNS runs (median and worst wall time, largest RSS), with
# `--version` alongside. Not a timed test: run by hand (README.md, Benchmarks).
#   tests/bench/bench_startup.sh [BUILD_DIR] [RUNS]   (SHARDSCOPE_BIN=... measures another binary)
set -eu
build=${1:-build}
runs=${2:-50}
bin=${SHARDSCOPE_BIN:-$build/app/shardscope}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'mesh dp=4 tp=8\nz_{b_{dp} s d} = W^1_{d r_{tp} f} phi(W^0_{r_{tp} f e} x_{b_{dp} s e})\n' >"$tmp/one.ein"
"$bin" check --quiet "$tmp/one.ein" >/dev/null 2>&1 || { echo "check of $tmp/one.ein failed"; exit 1; }
measure() { # measure LABEL ARGS...
    local label=$1
    shift
    : >"$tmp/times"
    for _ in $(seq "$runs"); do
        /usr/bin/time -f '%e %U %S %M' -a -o "$tmp/times" "$bin" "$@" >/dev/null 2>&1 || true
    done
    # GNU time prints seconds with 2 decimals: also time the whole loop for a finer mean.
    local start end
    start=$(date +%s%N)
    for _ in $(seq "$runs"); do "$bin" "$@" >/dev/null 2>&1 || true; done
    end=$(date +%s%N)
    sort -n "$tmp/times" | awk -v label="$label" -v runs="$runs" \
        -v mean_ms="$(( (end - start) / runs / 1000 ))" '
        { t[NR] = $1; cpu += $2 + $3; if ($4 > rss) rss = $4 }
        END { printf "%-22s wall: mean %.1f ms, median %.0f ms, worst %.0f ms; CPU (user+sys) mean %.1f ms; max RSS %.1f MB (%d runs)\n",
                     label, mean_ms / 1000, t[int((NR + 1) / 2)] * 1000, t[NR] * 1000, cpu / NR * 1000, rss / 1024, runs }'
}
# Wall time to the microsecond (python's perf_counter around each run, the spawn included).
precise() { # precise LABEL ARGS...
    local label=$1
    shift
    python3 - "$runs" "$label" "$bin" "$@" <<'PY'
import statistics, subprocess, sys, time
runs, label, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
ts = []
for _ in range(runs):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ts.append(time.perf_counter() - t)
ts.sort()
print("%-22s wall: median %.2f ms, mean %.2f ms, 90th percentile %.2f ms (%d runs, perf_counter)"
      % (label, statistics.median(ts) * 1e3, statistics.mean(ts) * 1e3,
         ts[min(len(ts) - 1, int(len(ts) * 0.9))] * 1e3, runs))
PY
}
precise "check, one statement" check "$tmp/one.ein"
measure "check, one statement" check "$tmp/one.ein"
measure "--version" --version
echo "libraries loaded at start: $(ldd "$bin" | wc -l) ($(ldd "$bin" | awk '{print $1}' | tr '\n' ' '))"
