#!/bin/sh
# Trains, or resumes, both built-in models (TRAINING.md): task suite v2, both trainings side by side (one torch
# thread each, nice 19), then the held-out evaluation in torch, the C++ self-test fixtures and, when built, dyllm eval.
# Usage: sh assets/train/run_all.sh BUDGET [STATE_DIR]   (from the repository root)
#   BUDGET     optimizer steps per model (24000), steps for tiny-llada,tiny-dream (24400,23500: the shipped v2 models)
#              or training hours per model with an h suffix (6h)
#   STATE_DIR  state, logs, task suite and exported models (default assets/train_work/v2; keep it to resume: the
#              repository holds no training state). Rerunning the same command resumes from STATE_DIR/<family>/state.pt;
#              stop with SIGTERM/SIGINT to the process group (state is saved).
# Nothing under assets/models or assets/tasks is written: shipping copies STATE_DIR/<family>/export there by hand.
set -e
BUDGET=${1:?usage: sh assets/train/run_all.sh BUDGET [STATE_DIR]  (BUDGET: steps, e.g. 24000, steps per family, e.g. 24400,23500, or hours, e.g. 6h)}
S=${2:-assets/train_work/v2}
case $BUDGET in
  *h) BL="--budget-hours ${BUDGET%h}"; BD=$BL ;;
  *,*) BL="--budget-steps ${BUDGET%%,*}"; BD="--budget-steps ${BUDGET#*,}" ;;
  *) BL="--budget-steps $BUDGET"; BD=$BL ;;
esac
case $BUDGET in  # hours: digits and a dot; steps: digits, or two digit strings joined by a comma
  ?*h) case ${BUDGET%h} in *[!0-9.]*) BL= ;; esac ;;
  ?*,?*) case ${BUDGET%%,*}:${BUDGET#*,} in *[!0-9:]*) BL= ;; esac ;;
  *[!0-9]*|'') BL= ;;
esac
[ -n "$BL" ] || { echo "run_all.sh: BUDGET '$BUDGET' is neither steps (30000), steps per family (24400,23500: tiny-llada, tiny-dream) nor hours (6h)" >&2; exit 2; }
PY=/usr/bin/python3   # Debian's python3-torch; the pyenv python3 on PATH has no torch
if ! $PY -c "import torch" 2>/dev/null; then
  echo "run_all.sh: $PY cannot import torch (apt-get install python3-torch)" >&2; exit 2
fi
# OPENBLAS_CORETYPE=Haswell (some hosts set it) halves OpenBLAS speed on AVX-512 CPUs, and OpenBLAS 0.3.21
# falls back to its SSE3 "Prescott" kernels on CPUs it does not know (Emerald Rapids Xeon: torch's 4096x128x256 matmul
# 28 GFLOP/s, 122 with SkylakeX). So the trainers get the best kernel set the CPU has. This is the trainers' own
# environment only; tests and CI never change OPENBLAS_*.
CORE=
if grep -qw avx512f /proc/cpuinfo; then CORE=SkylakeX; elif grep -qw avx2 /proc/cpuinfo; then CORE=Haswell; fi
ENV="env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ${CORE:+OPENBLAS_CORETYPE=$CORE} OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1"
# The v2 shape: 8 layers at width 128 (the engine's kernels run head dim 32 about twice as fast per FLOP as 24, so a
# narrower model is not faster there); Dream-format model with GQA (4 query / 2 kv heads), as Dream-7B has it.
SHAPE="--format v2 --d 128 --layers 8 --heads 4 --ffn 256 --warmup 200"
mkdir -p $S/llada $S/dream
$PY assets/train/make_tasks.py --format v2 --out $S/tasks-v2 > /dev/null
for f in llada dream; do
  B=$BL; [ $f = dream ] && B=$BD
  $ENV nice -n 19 $PY assets/train/train.py --family $f $SHAPE $B --work $S/$f --out $S/$f/export \
      >> $S/$f/train.log 2>&1 &
done
wait
grep -q '"final": true' $S/llada/export/train_meta.json && grep -q '"final": true' $S/dream/export/train_meta.json || {
  echo "run_all.sh: training stopped before its budget; rerun the same command to resume" >&2; exit 1; }
for f in llada dream; do
  $ENV nice -n 19 $PY assets/train/evaluate.py --model $S/$f/export --tasks $S/tasks-v2 --limit 50 \
      --out $S/eval_$f.json > $S/eval_$f.log 2>&1 &
done
wait
for f in llada dream; do
  $ENV nice -n 19 $PY assets/train/make_selftest.py --model $S/$f/export --tasks $S/tasks-v2 > /dev/null
done
# The goals as the C++ engine measures them, when the engine is built (README's build command).
if [ -x build/app/dyllm ]; then
  nice -n 19 sh assets/train/eval_engine.sh build/app/dyllm "$S/%f/export" $S/tasks-v2 $S
fi
