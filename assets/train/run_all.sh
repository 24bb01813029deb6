#!/bin/sh
# Reproduces the built-in models end to end (see TRAINING.md): task files, both trainings side by side (one torch
# thread each, nice 5), evaluation on the held-out items, the C++ self-test fixtures and TRAINING.md.
# Usage: sh assets/train/run_all.sh [WALL_MINUTES]   (run from the repository root; default 85; the brief allows 90 per model)
set -e
WALL=${1:-85}
PY=/usr/bin/python3   # Debian's torch; the pyenv python3 on PATH has no torch
W=assets/train_work
mkdir -p $W
# OPENBLAS_CORETYPE=Haswell (set on these machines) halves OpenBLAS speed (measured on these machines).
ENV="env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1"
$PY assets/train/make_tasks.py
for f in llada dream; do
  $ENV nice -n 5 $PY assets/train/train.py --family $f --out assets/models/tiny-$f --work $W/$f \
      --wall-minutes "$WALL" > $W/train_$f.log 2>&1 &
done
wait
for f in llada dream; do
  $ENV nice -n 5 $PY assets/train/evaluate.py --model assets/models/tiny-$f --limit 50 --out $W/eval_$f.json \
      > $W/eval_$f.log 2>&1 &
done
wait
for f in llada dream; do
  $ENV $PY assets/train/make_selftest.py --model assets/models/tiny-$f
done
$PY assets/train/report.py
# The goals as the C++ engine measures them, when the engine is built (README's build command).
if [ -x build/app/dyllm ]; then sh assets/train/eval_engine.sh build/app/dyllm && $PY assets/train/report.py; fi
