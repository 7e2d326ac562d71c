#!/usr/bin/env bash
# Every sample runs and verifies: run_samples.sh SHARDSCOPE SAMPLES_DIR sim|mpi [MPIEXEC]
# sim: random data, then integer data (linear statements compare exactly), at small ranges.
# mpi: one process per device of the sample's mesh, under mpirun --oversubscribe.
set -uo pipefail
bin=$1 dir=$2 backend=$3 mpiexec=${4:-mpirun}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
failed=0 count=0
for f in "$dir"/*.ein; do
    count=$((count + 1))
    if [ "$backend" = sim ]; then
        for data in random ints; do
            if ! out=$("$bin" exec --small --data "$data" "$f" 2>&1); then
                echo "FAIL ($data): $f"; echo "$out"; failed=$((failed + 1))
            fi
        done
    else
        n=$("$bin" check --json "$f" | python3 -c '
import json, sys
n = 1
for a in json.load(sys.stdin)["files"][0]["mesh"]:
    n *= a["size"]
print(n)')
        if ! out=$("$mpiexec" --oversubscribe -np "$n" "$bin" exec --backend mpi --small "$f" 2>&1); then
            echo "FAIL (mpi, $n ranks): $f"; echo "$out"; failed=$((failed + 1))
        else
            echo "ok (mpi, $n ranks): $f: $(echo "$out" | tail -1)"
        fi
    fi
done
echo "$count samples, $failed failures"
[ "$failed" -eq 0 ] && [ "$count" -gt 0 ]
