#!/usr/bin/env bash
# The "time tracks FLOPs" checks (not a test, never run by ctest or CI): ROUNDS rounds of
# `dyllm bench --methods original,dyllm,fast-dual,fast-prefix,dllm-cache --tau 0.99 -r 3` on tiny-llada (default
# prompt) and on a hidden-256 LLaDA-format checkpoint (256-id prompt, gen 64, steps 64, block 32, --ignore-eos), each
# at 1 and 2 threads, cells interleaved within a round so a noisy neighbour hits every cell alike; then the medians
# per cell: original's tokens/s, GFLOP/s and dense-step share of the sgemm rate measured beside it, every cached
# method's GFLOP/s over original's, and DyLLM / fast-dual tokens/s against their FLOP ratio. A 2-thread run whose
# threads did not run in parallel (its sgemm probe below 1.3x of one thread: vCPUs on one core or far apart, see
# roofline_checks.py) is kept as *.serialN and run again, up to RETRIES times (the last try stays the round's file);
# the table counts only parallel rounds.
#   tests/bench/roofline_checks.sh [BUILD_DIR=build] [OUT=/tmp/roofline] [ROUNDS=3] [RETRIES=4]
# Run nothing heavy beside it. Report the CPU model and BLAS kernel (`dyllm bench` prints both) with the figures.
set -euo pipefail
BUILD=${1:-build}
OUT=${2:-/tmp/roofline}
ROUNDS=${3:-3}
RETRIES=${4:-4}
DYLLM="$BUILD/app/dyllm"
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
H256="$OUT/h256"
if [ ! -f "$H256/config.json" ]; then
    "$DYLLM" make-model -o "$H256" --family llada --dtype f32 --layers 4 --embd 256 --heads 4 --ffn 688 >/dev/null
fi
METHODS=original,dyllm,fast-dual,fast-prefix,dllm-cache
PROMPT_256=$(printf 'a%.0s' $(seq 256))  # 256 letters: 256 ids in the byte-level test tokenizer
# bench_cell FILE ARGS...: one bench run into FILE; a 2-thread run again while its threads did not run in parallel.
bench_cell() {
    local file=$1 try
    shift
    for try in $(seq 0 "$RETRIES"); do
        "$DYLLM" bench "$@" --json >"$file"
        if python3 "$HERE/roofline_checks.py" --parallel "$file"; then return; fi
        echo "roofline_checks: $(basename "$file"): the threads did not run in parallel (try $((try + 1)))" >&2
        if [ "$try" -lt "$RETRIES" ]; then mv "$file" "${file%.json}.serial$try"; fi
    done
}
for r in $(seq "$ROUNDS"); do
    for t in 1 2; do
        bench_cell "$OUT/tiny_t${t}_r${r}.json" -m tiny-llada --methods "$METHODS" --tau 0.99 -r 3 -t "$t"
        bench_cell "$OUT/h256_t${t}_r${r}.json" -m "$H256" --methods "$METHODS" --tau 0.99 -r 3 -t "$t" --no-chat \
            --ignore-eos -n 64 --steps 64 --block-length 32 --prompt "$PROMPT_256"
    done
    echo "roofline_checks: round $r of $ROUNDS done" >&2
done
python3 "$HERE/roofline_checks.py" "$OUT"
