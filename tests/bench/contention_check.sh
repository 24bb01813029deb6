#!/usr/bin/env bash
# "More threads must never be slower than fewer" beside a busy process (not a test, never run by ctest or
# CI): a shell busy loop pinned to CPU 0 (taskset) runs while ROUNDS rounds of `dyllm bench -m tiny-llada --methods
# original,dyllm,fast-dual,dllm-cache -r 3` alternate between -t 1 and -t 2; then each method's tokens/s at -t 2 over
# -t 1, per round and their median: about 1 with the thread pool's contention backoff (kernels/cpu/thread_pool.h,
# kernels/README.md "Thread pool"), well below without it.
#   tests/bench/contention_check.sh [BUILD_DIR=build] [OUT=/tmp/contention] [ROUNDS=2]
# Needs at least 2 CPUs and util-linux's taskset; run nothing else beside it.
set -euo pipefail
BUILD=${1:-build}
OUT=${2:-/tmp/contention}
ROUNDS=${3:-2}
DYLLM="$BUILD/app/dyllm"
mkdir -p "$OUT"
taskset -c 0 sh -c 'while :; do :; done' &
HOG=$!
trap 'kill "$HOG" 2>/dev/null || true' EXIT
for r in $(seq "$ROUNDS"); do
    for t in 1 2; do
        "$DYLLM" bench -m tiny-llada --methods original,dyllm,fast-dual,dllm-cache -r 3 -t "$t" --json \
            >"$OUT/t${t}_r${r}.json"
    done
done
python3 - "$OUT" "$ROUNDS" <<'EOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def rows(path):
    d = json.load(open(path))
    d = d["results"] if isinstance(d, dict) else d
    return {x["method"]: x["tokens_per_s"] for x in d}
ratios = {}
for r in range(1, rounds + 1):
    one, two = rows(f"{out}/t1_r{r}.json"), rows(f"{out}/t2_r{r}.json")
    for m in one:
        ratios.setdefault(m, []).append(two[m] / one[m])
print("| method | -t 2 / -t 1 tokens/s per round | median |")
print("|---|---|--:|")
for m, v in ratios.items():
    print(f"| {m} | {' '.join(f'{x:.2f}' for x in v)} | {statistics.median(v):.2f} |")
EOF
