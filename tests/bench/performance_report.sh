#!/usr/bin/env bash
# Writes docs/performance.md (and the README's performance table) from fresh benchmark runs: `dyllm bench` for every
# method on both built-in models and a hidden-256 LLaDA-format checkpoint, at 1 and 2 threads, ROUNDS rounds with the
# cells interleaved so a noisy neighbour hits every cell alike; optionally the LLaDA-8B shape (bench_real_size.sh) and
# the official Python code (official_llada.py). Not a test: never run by ctest or CI. Run nothing heavy beside it.
#   tests/bench/performance_report.sh BUILD [OUT=docs/performance.md] [--quick] [--rounds N] [--reps N]
#       [--real-size] [--fast-dllm DIR] [--no-readme]
#   --quick        one round of one repetition (a check that the script works; figures not for keeping)
#   --real-size    also the LLaDA-8B shape: a 16 GB random bf16 checkpoint and its Q8_0 and Q4_K_M GGUF files,
#                  needs ~17 GB of free memory and ~30 GB of disk
#                  (DYLLM_REAL_SIZE_LAYERS=N writes N layers of that shape instead of 32; DYLLM_REAL_SIZE_DIR keeps it)
#   --fast-dllm D  also the official LLaDA / Fast-dLLM decoders, from the llada/ directory D of an NVlabs/Fast-dLLM
#                  checkout (or FAST_DLLM=D), on Debian's torch (/usr/bin/python3); skipped when D/generate.py is absent
# The default run (3 rounds of -r 3) takes 5-10 minutes on a 2-core CPU (--quick: 1-2 minutes).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
usage() { sed -n '6,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
BUILD=$1
shift
OUT=$ROOT/docs/performance.md
ROUNDS=3 REPS=3 REAL=0 README=1 MODE=default
FAST_DLLM=${FAST_DLLM:-}
if [ $# -ge 1 ] && [ "${1#--}" = "$1" ]; then OUT=$1; shift; fi
while [ $# -gt 0 ]; do
    case $1 in
        --quick) ROUNDS=1 REPS=1 MODE=quick ;;
        --rounds) ROUNDS=${2:?--rounds needs a count}; shift ;;
        --reps) REPS=${2:?--reps needs a count}; shift ;;
        --real-size) REAL=1 ;;
        --fast-dllm) FAST_DLLM=${2:?--fast-dllm needs a directory}; shift ;;
        --no-readme) README=0 ;;
        *) echo "performance_report.sh: unknown argument '$1'" >&2; usage ;;
    esac
    shift
done
case $ROUNDS$REPS in *[!0-9]*) echo "performance_report.sh: --rounds and --reps take whole numbers" >&2; exit 2 ;; esac
DYLLM=$BUILD/app/dyllm
[ -x "$DYLLM" ] || { echo "performance_report.sh: no $DYLLM (build the project first)" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dyllm-perf.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
START=$(date +%s)
log() { echo "performance_report: $(date -u +%T) $*" >&2; }

# The hidden-256 shape: a random LLaDA-format checkpoint (4 layers, d 256, 4 heads, FFN 688) and a 256-letter prompt
# (256 ids in the byte-level test tokenizer), gen 64, steps 64, block 32, no chat template, no early end.
H256=$WORK/h256
"$DYLLM" make-model -o "$H256" --family llada --dtype f32 --layers 4 --embd 256 --heads 4 --ffn 688 >/dev/null
PROMPT_256=$(printf 'a%.0s' $(seq 256))
H256_ARGS=(--no-chat --ignore-eos -n 64 --steps 64 --block-length 32 --prompt "$PROMPT_256")
METHODS=original,dyllm,fast-dual,fast-prefix,dllm-cache,dkv-decode,dkv-greedy,d2cache,sparse-dllm,elastic-cache

# cell NAME THREADS ROUND ARGS...: one `dyllm bench` run (DyLLM at its family's default tau), JSON and stderr kept.
cell() {
    local name=$1 t=$2 r=$3
    shift 3
    "$DYLLM" bench --methods "$METHODS" -r "$REPS" -t "$t" --json "$@" \
        >"$WORK/bench_${name}_t${t}_r${r}.json" 2>"$WORK/bench_${name}_t${t}_r${r}.log"
}
for r in $(seq "$ROUNDS"); do
    for t in 1 2; do
        cell tiny-llada "$t" "$r" -m tiny-llada
        cell tiny-dream "$t" "$r" -m tiny-dream
        cell hidden-256 "$t" "$r" -m "$H256" "${H256_ARGS[@]}"
    done
    log "round $r of $ROUNDS done"
done

# Logit error of each storage type against f32 (bench_quant_logits): hidden-256 and a 4096-wide random checkpoint
# (2 layers of the LLaDA-8B shape, vocabulary 8192; ~2 GB of f32, removed afterwards).
QUANT_LOGITS=$BUILD/tests/bench/bench_quant_logits
if [ -x "$QUANT_LOGITS" ]; then
    log "logit error per storage type"
    W4K=$WORK/w4096
    "$DYLLM" make-model -o "$W4K" --family llada --dtype f32 --layers 2 --embd 4096 --heads 32 --ffn 12288 \
        --vocab 8192 >/dev/null
    "$QUANT_LOGITS" "$H256" --threads 2 >"$WORK/logits.jsonl"
    "$QUANT_LOGITS" "$W4K" --threads 2 >>"$WORK/logits.jsonl"
    rm -rf "$W4K"
else
    log "no $QUANT_LOGITS (build the tests): the logit-error table is skipped"
fi

if [ "$REAL" = 1 ]; then
    log "LLaDA-8B shape (bench_real_size.sh; writes a bf16 checkpoint first)"
    RDIR=${DYLLM_REAL_SIZE_DIR:-$WORK/llada8b}
    # bf16, then the GGUF files `dyllm quantize` writes from it (DIR.T.gguf), in one run (bench_real_types.sh).
    bash "$HERE/bench_real_types.sh" "$BUILD" "$RDIR" 2 "" "${DYLLM_REAL_SIZE_LAYERS:-}" \
        >"$WORK/real_types.md"
    cp "$RDIR.run.json" "$WORK/real.run.json"
    cp "$RDIR.time.txt" "$WORK/real.time.txt"
    grep -o '"n_layers": *[0-9]*' "$RDIR/config.json" >"$WORK/real.layers" || true
    [ -n "${DYLLM_REAL_SIZE_DIR:-}" ] || rm -rf "$RDIR" "$RDIR".*
fi

if [ -n "$FAST_DLLM" ] && [ -f "$FAST_DLLM/generate.py" ]; then
    log "official LLaDA / Fast-dLLM code on hidden-256 (torch, 1 thread)"
    IDS=$("$DYLLM" tokenize -m "$H256" -p "$PROMPT_256" | tr -d '[] \n')  # a JSON array -> 1,2,3
    for m in original fast-dual; do
        "$DYLLM" generate -m "$H256" --prompt-ids "$IDS" --no-chat --ignore-eos -n 64 --steps 64 --block-length 32 \
            --method "$m" -t 1 --json >"$WORK/engine_$m.json"
    done
    /usr/bin/python3 "$HERE/official_llada.py" --fast-dllm "$FAST_DLLM" --model "$H256" --prompt-ids "$IDS" \
        --gen 64 --steps 64 --block 32 --methods original,fast-dual --reps "$REPS" --threads 1 \
        --expect "original=$WORK/engine_original.json" --expect "fast-dual=$WORK/engine_fast-dual.json" \
        >"$WORK/official.jsonl"
    cell official 1 1 -m "$H256" "${H256_ARGS[@]}"
elif [ -n "$FAST_DLLM" ]; then
    log "no $FAST_DLLM/generate.py: the official-code comparison is skipped"
fi

# The machine, as the header names it.
{
    echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "cores=$(nproc)"
    echo "flags=$(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2- | tr ' ' '\n' |
        grep -xE 'avx|avx2|fma|f16c|avx512f|avx512bw|avx512vl|avx512_vnni|avx512_bf16|avx512_fp16|amx_tile|amx_bf16' |
        tr '\n' ' ')"
    echo "commit=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(
        git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "date=$(date -u +%F)"
    echo "version=$("$DYLLM" --version 2>&1 | head -1)"
    echo "mode=$MODE"
    echo "rounds=$ROUNDS"
    echo "reps=$REPS"
    echo "minutes=$((($(date +%s) - START + 30) / 60))"
} >"$WORK/machine.txt"

args=("$WORK" "$OUT" "$HERE/performance_notes.md")
[ "$README" = 1 ] && args+=(--readme "$ROOT/README.md")
python3 "$HERE/performance_report.py" "${args[@]}"
log "wrote $OUT in $(($(date +%s) - START)) s"
