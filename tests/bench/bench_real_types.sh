#!/usr/bin/env bash
# The LLaDA-8B shape at several storage types in one run (not a test, never run by ctest or CI): the bf16 checkpoint
# of bench_real_size.sh (written to DIR unless there), the GGUF files `dyllm quantize` writes from it (DIR.T.gguf,
# kept), one `dyllm generate` per type (25 prompt + 8 response rows, DyLLM: 4 dense steps of 33 rows, then sparse
# steps; for a GGUF file the second of two runs, its pages then in memory) with peak RSS, and the memory read
# bandwidth measured in the same run; prints a Markdown table of each type's dense and sparse step beside the bf16
# checkpoint's and their streaming floors (weight bytes / GB/s). A type written T@ISA runs T's file with
# `--quant-isa ISA` (what a CPU without the wider instruction set runs); the default list adds q4_k_m@avx512 where the
# CPU has AMX and q4_k_m@avx2 where it has AVX-512.
# Needs ~17 GB of free memory and ~30 GB of disk.
#   tests/bench/bench_real_types.sh [BUILD_DIR=build] [DIR=/tmp/llada8b] [THREADS=2] [TYPES="q8_0 q4_k_m ..."] [LAYERS]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-build}
DIR=${2:-/tmp/llada8b}
THREADS=${3:-2}
DEFAULT_TYPES="q8_0 q4_k_m"
grep -qw amx_int8 /proc/cpuinfo && DEFAULT_TYPES+=" q4_k_m@avx512"
grep -qw avx512f /proc/cpuinfo && DEFAULT_TYPES+=" q4_k_m@avx2"
TYPES=${4:-$DEFAULT_TYPES}
LAYERS=${5:-}
STREAM=$BUILD/tests/bench/bench_stream_read
[ -x "$STREAM" ] || { echo "bench_real_types.sh: no $STREAM (build the tests)" >&2; exit 2; }
OUT=$(mktemp -d "${TMPDIR:-/tmp}/dyllm-types.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

# Checkpoint and GGUF files first (writing and quantizing take minutes; not timed), then the timed runs.
bash "$HERE/bench_real_size.sh" "$BUILD" "$DIR" "$THREADS" "$LAYERS" llada >"$OUT/bf16.txt"
cp "$DIR.run.json" "$OUT/bf16.run.json"
cp "$DIR.time.txt" "$OUT/bf16.time.txt"
paged=" "
for spec in $TYPES; do
    t=${spec%@*}
    isa=auto
    [ "$t" = "$spec" ] || isa=${spec#*@}
    # A GGUF file's weights are read from its mapping at every step: a first run pages the file in (after the bf16
    # checkpoint's 16 GB, a Q8_0 file's dense steps measured 1.2-2.3 s while it was still being read, 1.02-1.05 s on
    # the run after), so the second run is the one kept.
    if [ "${paged#* $t }" = "$paged" ]; then
        bash "$HERE/bench_real_size.sh" --type "$t" "$BUILD" "$DIR" "$THREADS" "$LAYERS" llada >/dev/null
        paged+="$t "
    fi
    bash "$HERE/bench_real_size.sh" --type "$t" --quant-isa "$isa" "$BUILD" "$DIR" "$THREADS" "$LAYERS" llada \
        >"$OUT/$spec.txt"
    cp "$DIR.$t.gguf.run.json" "$OUT/$spec.run.json"
    cp "$DIR.$t.gguf.time.txt" "$OUT/$spec.time.txt"
    stat -c %s "$DIR.$t.gguf" >"$OUT/$spec.bytes"
done
du -sb --apparent-size "$DIR" | cut -f1 >"$OUT/bf16.bytes"
"$STREAM" --gb 4 --threads "$THREADS" >"$OUT/stream.json"

python3 - "$OUT" "bf16 $TYPES" "$THREADS" <<'PY'
import json, os, statistics, sys
out, types, threads = sys.argv[1], sys.argv[2].split(), sys.argv[3]
gbs = json.load(open(os.path.join(out, "stream.json")))["gb_per_s"]
def load(t):
    d = json.load(open(os.path.join(out, f"{t}.run.json")))
    steps = d["accounting"]["steps"]
    dense = [s for s in steps if s["layers"][0]["query_rows"] >= 33]
    sparse = [s for s in steps if s["layers"][0]["query_rows"] < 33]
    rss = next(int(l.split(":")[-1]) for l in open(os.path.join(out, f"{t}.time.txt")) if "Maximum resident" in l)
    return {"dense": statistics.median(s["seconds"] for s in dense) if dense else float("nan"),
            "sparse": statistics.median(s["seconds"] for s in sparse) if sparse else float("nan"),
            "dense_gflop": statistics.median(s["flops"] for s in dense) / 1e9 if dense else float("nan"),
            "rss_gib": rss / 2**20, "gb": int(open(os.path.join(out, f"{t}.bytes")).read()) / 1e9,
            "backend": d.get("kernels", d["backend"])}
r = {t: load(t) for t in types}
b = r["bf16"]
print(f"LLaDA-8B shape, random weights, {threads} threads, 25 prompt + 8 response rows (DyLLM); memory read "
      f"bandwidth {gbs:.1f} GB/s ({threads} threads, same run); backend {b['backend']}.\n")
print("| weights | quantized products | file GB | peak RSS GiB | dense step s (x bf16) | dense GFLOP/s | "
      "sparse step s (x bf16) | sparse streaming floor s | sparse / floor |")
print("|---|---|--:|--:|--:|--:|--:|--:|--:|")
for t in types:
    x = r[t]
    floor = x["gb"] / gbs
    # The backend line ends "..., quantized avx512+amx)": the instruction set the quantized products ran on.
    isa = x["backend"].rsplit("quantized ", 1)[-1].rstrip(")") if "quantized " in x["backend"] else "?"
    name = t.split("@")[0]
    print(f"| {name} | {isa if name != 'bf16' else '-'} | {x['gb']:.2f} | {x['rss_gib']:.2f} | "
          f"{x['dense']:.3f} ({x['dense'] / b['dense']:.2f}x) | {x['dense_gflop'] / x['dense']:.0f} | "
          f"{x['sparse']:.3f} ({x['sparse'] / b['sparse']:.2f}x) | {floor:.3f} | {x['sparse'] / floor:.2f} |")
PY
