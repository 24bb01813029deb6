#!/bin/sh
# Continuation phase used for the shipped models (TRAINING.md): resumes each model from its phase-1 checkpoint with a
# fresh AdamW, short warmup and a second cosine over WALL minutes. Usage: sh assets/train/phase2.sh [WALL_MINUTES]
set -e
WALL=${1:-13}
PY=/usr/bin/python3
W=assets/train_work
ENV="env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1"
for f in llada dream; do
  cp assets/models/tiny-$f/train_meta.json $W/meta1_$f.json
  cp $W/$f/ckpt.pt $W/$f/ckpt_phase1.pt
  $ENV nice -n 5 $PY assets/train/train.py --family $f --out assets/models/tiny-$f --work $W/$f \
      --resume $W/$f/ckpt_phase1.pt --wall-minutes "$WALL" --lr 6e-4 --warmup 20 --seed 1 --export-every-min 5 \
      > $W/train2_$f.log 2>&1 &
done
wait
