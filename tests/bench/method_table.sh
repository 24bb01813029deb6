#!/usr/bin/env bash
# Every decoding method side by side (not a test, never run by ctest or CI): on both built-in models the task-suite
# sweep of `dyllm bench --task all --methods all` (held-out accuracy and engine tokens/s on the same items, 4-shot
# prompts, each method at its defaults, DyLLM at the family's tau), and on the hidden-256 shape in the paper's regime
# (a random LLaDA-format checkpoint, 4 layers, d 256; a 512-token prompt, gen 256 over blocks of 32, decoding past EOS)
# `dyllm bench --methods all` (tokens/s and x original within one run). Prints one Markdown table, a row per method.
#   tests/bench/method_table.sh [BUILD_DIR=build] [LIMIT=50] [THREADS=1] [REPS=3]
set -euo pipefail
BUILD=${1:-build}
LIMIT=${2:-50}
THREADS=${3:-1}
REPS=${4:-3}
DYLLM="$BUILD/app/dyllm"
[ -x "$DYLLM" ] || { echo "method_table.sh: no $DYLLM (build first)" >&2; exit 2; }
OUT=$(mktemp -d "${TMPDIR:-/tmp}/dyllm-methods.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

for m in tiny-llada tiny-dream; do
    tau=0.99
    [ "$m" = tiny-dream ] && tau=0.995
    "$DYLLM" bench -m "$m" --backend cpu -t "$THREADS" --task all --limit "$LIMIT" --shots 4 --methods all \
        --tau "$tau" -o "$OUT/$m.csv" >/dev/null
done
H256="$OUT/hidden-256"
"$DYLLM" make-model -o "$H256" --family llada --dtype f32 --layers 4 --embd 256 --heads 4 --ffn 688 >/dev/null
PROMPT_512=$(printf 'a%.0s' $(seq 512))  # 512 ids: the random checkpoint's byte-level tokenizer, one per letter
"$DYLLM" bench -m "$H256" --backend cpu -t "$THREADS" --prompt "$PROMPT_512" --no-chat --ignore-eos -n 256 \
    --steps 256 --block-length 32 -r "$REPS" --methods all --json -o "$OUT/h256.json" >/dev/null

python3 - "$OUT" "$LIMIT" "$THREADS" "$REPS" <<'PY'
import csv, json, os, sys
out, limit, threads, reps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
def sweep(name):
    rows = list(csv.DictReader(open(os.path.join(out, name + ".csv"))))
    # A --task all sweep has one row per method and task plus an "all" row per method: keep the latter.
    return {r["method"]: r for r in rows if r["task"] == "all"}
models = {m: sweep(m) for m in ("tiny-llada", "tiny-dream")}
h = json.load(open(os.path.join(out, "h256.json")))
rows = h["rows"] if isinstance(h, dict) and "rows" in h else h
h256 = {r["method"]: r for r in rows}
methods = list(h256) if "original" in h256 else ["original"] + list(h256)
orig = {m: float(models[m]["original"]["tokens_per_s"]) for m in models}
print(f"Held-out accuracy (`--task all --limit {limit} --shots 4`) and engine tokens/s (x original) per model, "
      f"{threads} thread(s); hidden-256: 512-token prompt, gen 256, block 32, past EOS, median of {reps}.\n")
print("| method | tiny-llada accuracy | tiny-llada tok/s (x original) | tiny-dream accuracy | "
      "tiny-dream tok/s (x original) | hidden-256 p512 g256 tok/s (x original) |")
print("|---|--:|--:|--:|--:|--:|")
for me in methods:
    cells = [f"`{me}`"]
    for m in models:
        r = models[m].get(me)
        if r is None:
            cells += ["-", "-"]
            continue
        t = float(r["tokens_per_s"])
        cells += [f"{float(r['accuracy']):.3f}", f"{t:.1f} ({t / orig[m]:.2f}x)"]
    r = h256.get(me)
    cells.append(f"{float(r['tokens_per_s']):.1f} ({float(r['speedup']):.2f}x)" if r else "-")
    print("| " + " | ".join(cells) + " |")
PY
