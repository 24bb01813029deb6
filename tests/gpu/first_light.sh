#!/usr/bin/env bash
# The first run of the CUDA path on a machine with an NVIDIA GPU and the CUDA toolkit: builds with CUDA, runs the CUDA
# tests (ctest -L cuda: the op table against the CPU reference, whole runs CUDA vs CPU), a CUDA-vs-CPU decode of both
# built-in models, the CUDA kernel benchmark, a CUDA trace with CUPTI kernel records and a studio screenshot of the
# GPU kernels tab, and writes one report file (each step's full output beside it as first_light_STEP.log). Usage: tests/gpu/first_light.sh [BUILD_DIR] (default build-cuda; report: BUILD_DIR/
# first_light_report.txt). Exit 0: every step passed; 1: a step failed (the report names it); 77: no GPU or no CUDA
# toolkit here (checked first, before any build). Budget: under 8 minutes on 16 cores.
set -u
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$SRC/build-cuda}"
JOBS="${JOBS:-$(nproc)}"
REPORT="$BUILD/first_light_report.txt"
FAILED=0

say() { printf '%s\n' "$*"; }

# ---- what this machine has (no build before these pass) ----
# Tools the later steps need, named up front so a GPU day does not stop halfway for an apt-get.
later=""
for t in ctest python3 xvfb-run timeout; do command -v "$t" > /dev/null || later="$later $t"; done
[ -n "$later" ] && say "first_light: note: missing for later steps:$later (apt-get install cmake python3 xvfb xauth)"
missing=""
command -v cmake > /dev/null || missing="$missing cmake"
command -v nvidia-smi > /dev/null || missing="$missing nvidia-smi(driver)"
NVCC="$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2> /dev/null || true)"
[ -n "$NVCC" ] || missing="$missing nvcc(CUDA toolkit)"
if [ -n "$missing" ]; then
    say "first_light: no GPU: missing$missing; nothing built (exit 77)"
    exit 77
fi
if ! GPU="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2> /dev/null)" ||
    [ -z "$GPU" ]; then
    say "first_light: no GPU: nvidia-smi finds no device; nothing built (exit 77)"
    exit 77
fi

mkdir -p "$BUILD"
: > "$REPORT"
report() { printf '%s\n' "$*" | tee -a "$REPORT"; }
# step NAME TIMEOUT_S CMD...: runs CMD with its output in BUILD/first_light_NAME.log, one PASS/FAIL line in the report.
step() {
    local name="$1" limit="$2"
    shift 2
    local log="$BUILD/first_light_$name.log" t0=$SECONDS
    if timeout "$limit" "$@" > "$log" 2>&1; then
        report "PASS $name ($((SECONDS - t0)) s)"
    else
        report "FAIL $name (exit $?, $((SECONDS - t0)) s; last lines of $log:)"
        tail -n 15 "$log" | sed 's/^/    /' | tee -a "$REPORT"
        FAILED=1
    fi
}

report "first_light: $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -srm)"
report "gpu: $GPU"
report "nvcc: $("$NVCC" --version | tail -n 1)"
report "source: $(git -C "$SRC" rev-parse --short HEAD 2> /dev/null || echo unknown)"

# ---- build (CUDA and CUPTI on) ----
# Only this GPU's architecture (nvidia-smi's compute capability, 9.0 -> 90): a third of the .cu compile time of the
# default 80;90.
ARCH="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2> /dev/null | head -n 1 | tr -d ' .')"
report "cuda architecture: ${ARCH:-default (80;90)}"
step configure 120 cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DDYLLM_CUDA=ON -DDYLLM_CUPTI=ON \
    -DCMAKE_CUDA_COMPILER="$NVCC" ${ARCH:+-DCMAKE_CUDA_ARCHITECTURES=$ARCH}
step build 300 cmake --build "$BUILD" -j "$JOBS" --target dyllm dyllm-studio test_cuda cuda_bench_kernels
DYLLM="$BUILD/app/dyllm"
STUDIO="$BUILD/app/dyllm-studio"

# ---- ctest -L cuda: the CUDA op table against the CPU reference, CUDA-vs-CPU whole runs (bf16 tolerance in
# tests/cuda/test_cuda_run.cpp). Exit 77 there would mean the device was not usable: a failure here.
step ctest_cuda 180 ctest --test-dir "$BUILD" -L cuda --output-on-failure --no-tests=error
grep -E "tests passed|tests failed" "$BUILD/first_light_ctest_cuda.log" | sed 's/^/    /' | tee -a "$REPORT"

# ---- both built-in models decoded on CUDA and on the CPU: the same tokens (greedy, original = every step dense; the
# documented tolerance of the bf16 CUDA path is a first difference only at a near tie, which test_cuda_run checks
# with the logits; here the two token lists must match or the report shows both).
decode() {  # decode MODEL BACKEND -> the ids of the answer, one line
    "$DYLLM" generate -m "$1" --backend "$2" -n 32 -p "The capital of France is" --method original --json |
        python3 -c 'import json,sys; r=json.load(sys.stdin); print(" ".join(str(t) for s in r["sequences"] for t in s["token_ids"]))'
}
for m in tiny-llada tiny-dream; do
    cpu="$(decode "$m" cpu 2> "$BUILD/first_light_decode_$m.log")"
    gpu="$(decode "$m" cuda 2>> "$BUILD/first_light_decode_$m.log")"
    if [ -n "$cpu" ] && [ "$cpu" = "$gpu" ]; then
        report "PASS decode_$m (CUDA tokens = CPU tokens)"
    else
        report "FAIL decode_$m: cpu [$cpu] cuda [$gpu] (see $BUILD/first_light_decode_$m.log)"
        FAILED=1
    fi
done

# ---- the CUDA kernel benchmark (figures for the report, no assertion beyond running) ----
step cuda_bench_kernels 120 "$BUILD/tests/bench/cuda_bench_kernels"
tail -n 20 "$BUILD/first_light_cuda_bench_kernels.log" | sed 's/^/    /' >> "$REPORT"

# ---- CUPTI: a traced CUDA run whose Chrome trace holds GPU kernel records ----
TRACE="$BUILD/first_light_trace.json"
step trace_cuda 60 "$DYLLM" trace --backend cuda -n 32 -p "The capital of France is" -o "$TRACE"
n_gpu="$(grep -o '[0-9]* GPU records' "$BUILD/first_light_trace_cuda.log" | grep -o '^[0-9]*')"
if [ "${n_gpu:-0}" -gt 0 ]; then
    report "PASS cupti_records ($n_gpu GPU records in $TRACE)"
else
    report "FAIL cupti_records: no GPU records (see $BUILD/first_light_trace_cuda.log: CUPTI unavailable?)"
    FAILED=1
fi

# ---- a studio screenshot with the GPU kernels tab (filled by the worker's CUPTI capture) ----
if command -v xvfb-run > /dev/null; then
    SHOT="$BUILD/first_light_gpu_kernels.png"
    step studio_screenshot 120 xvfb-run -a -s "-screen 0 1600x1000x24" "$STUDIO" --backend cuda --tab gpu-kernels \
        --step 8 --screenshot "$SHOT"
    [ -s "$SHOT" ] && report "    screenshot: $SHOT (look at the GPU kernels tab: rows of kernels, not 'no records')"
else
    report "FAIL studio_screenshot: xvfb-run missing (apt-get install xvfb xauth)"
    FAILED=1
fi

report "first_light: $([ $FAILED = 0 ] && echo "all steps passed" || echo "some steps FAILED") in $SECONDS s; report $REPORT"
exit $FAILED
