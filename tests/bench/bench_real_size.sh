#!/usr/bin/env bash
# Real-size CPU measurement (not a test, never run by ctest or CI): writes a random bf16 checkpoint shaped
# like LLaDA-8B (16 GB, 6 shards) or Dream-7B (15 GB: GQA 28/4 heads, q/k/v biases) unless DIR holds one, then one
# dyllm run of 25 prompt + 8 response rows at T threads: 4 dense steps (33 rows) and 4 DyLLM sparse steps, with load
# time and peak RSS (/usr/bin/time -v). Needs ~17 GB of free memory.
#   tests/bench/bench_real_size.sh [--type T] [--quant-isa ISA] [BUILD_DIR=build] [DIR=/tmp/llada8b] [THREADS=2] [LAYERS=full]
#                                  [FAMILY=llada]
# LAYERS below the model's writes a shorter model of the same shape (per-layer time is what scales); remove DIR
# afterwards. --type T (f16, bf16, q8_0, q4_0, q4_k_m) runs a GGUF written from DIR by `dyllm quantize` (DIR.T.gguf,
# kept for the next run) instead of the bf16 directory. --quant-isa ISA (avx2, avx-vnni, ...) runs its quantized
# products with that instruction set (dyllm's --quant-isa: what a CPU without AVX-512 runs) and, below avx512, caps
# oneDNN at AVX2 (ONEDNN_MAX_CPU_ISA) and OpenBLAS at Haswell unless OPENBLAS_CORETYPE is already set; the engine's
# own small ops (attention, norms) keep the CPU's widest clones. The backend line names the kernels used.
set -euo pipefail
TYPE=
ISA=auto
while [ $# -gt 0 ] && [ "${1#--}" != "$1" ]; do
    case $1 in
        --type)
            [ $# -ge 2 ] || { echo "bench_real_size.sh: --type needs a value (f16, bf16, q8_0, q4_0, q4_k_m)" >&2; exit 2; }
            TYPE=$2
            shift 2
            ;;
        --quant-isa)
            [ $# -ge 2 ] || { echo "bench_real_size.sh: --quant-isa needs a value (auto, amx, avx512, avx-vnni, avx2, baseline)" >&2; exit 2; }
            ISA=$2
            shift 2
            ;;
        *) echo "bench_real_size.sh: unknown option '$1' (--type T, --quant-isa ISA)" >&2; exit 2 ;;
    esac
done
BUILD=${1:-build}
DIR=${2:-/tmp/llada8b}
THREADS=${3:-2}
LAYERS=${4:-}
FAMILY=${5:-llada}
DYLLM="$BUILD/app/dyllm"
case $FAMILY in
    llada) SHAPE=(--layers "${LAYERS:-32}" --embd 4096 --heads 32 --ffn 12288 --vocab 126464) ;;
    dream) SHAPE=(--layers "${LAYERS:-28}" --embd 3584 --heads 28 --kv-heads 4 --ffn 18944 --vocab 152064) ;;
    *) echo "bench_real_size.sh: FAMILY must be llada or dream (got '$FAMILY')" >&2; exit 2 ;;
esac
if [ ! -f "$DIR/config.json" ]; then
    "$DYLLM" make-model -o "$DIR" --family "$FAMILY" --dtype bf16 --shards 6 "${SHAPE[@]}"
fi
MODEL=$DIR
if [ -n "$TYPE" ]; then
    MODEL="$DIR.$TYPE.gguf"
    if [ ! -f "$MODEL" ]; then
        if ! "$DYLLM" quantize --help >/dev/null 2>&1; then
            echo "bench_real_size.sh: --type needs 'dyllm quantize', which this build of $DYLLM does not have" >&2
            exit 2
        fi
        "$DYLLM" quantize -m "$DIR" -o "$MODEL" --type "$TYPE"
    fi
fi
case $ISA in
    avx2 | avx-vnni | baseline)
        export ONEDNN_MAX_CPU_ISA=AVX2
        [ -n "${OPENBLAS_CORETYPE:-}" ] || export OPENBLAS_CORETYPE=Haswell
        echo "bench_real_size.sh: --quant-isa $ISA: ONEDNN_MAX_CPU_ISA=AVX2, OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE"
        ;;
esac
IDS=$(seq -s, 100 124)  # 25 prompt ids
/usr/bin/time -v "$DYLLM" generate -m "$MODEL" -t "$THREADS" --prompt-ids "$IDS" -n 8 --steps 8 --block-length 8 \
    --method dyllm --ignore-eos --quant-isa "$ISA" --json >"$MODEL.run.json" 2>"$MODEL.time.txt"
python3 - "$MODEL.run.json" "$MODEL.time.txt" "$MODEL" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"model {sys.argv[3]}; backend {d['kernels']}; load {d['load_s']:.2f} s")
for s in d['accounting']['steps']:
    rows = s['layers'][0]['query_rows']
    print(f"step {s['step']}: {s['kind']:<16} {s['seconds']:7.3f} s  {s['flops'] / 1e9:8.1f} GFLOP  "
          f"{s['flops'] / s['seconds'] / 1e9:6.1f} GFLOP/s  (layer 0: {rows} query rows)")
for line in open(sys.argv[2]):
    if any(k in line for k in ('Maximum resident', 'Elapsed (wall', 'User time', 'Percent of CPU')):
        print(line.strip())
PY
