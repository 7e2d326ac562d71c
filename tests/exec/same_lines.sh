# same_lines: filters `exec --show` output down to what every backend must print alike, for
# run_samples.sh and test_nccl.sh to compare a GPU backend with sim: not the header, the GPU's
# timing, or the error against the reference (cuBLAS and NCCL sum in another order than
# OpenBLAS), only its verdict.
same_lines() {
    grep -v -e '^exec: ' -e 'local compute on the GPU' | sed -E 's/max abs error .*  (PASS|FAIL)/\1/'
}
