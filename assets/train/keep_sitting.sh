#!/bin/sh
# Keeps the v2 trainings' state in the repository so that the next sitting, on another machine or a fresh checkout,
# resumes where this one stopped (run_all.sh seeds an empty STATE_DIR from it). Run from the repository root after
# stopping the trainers with SIGTERM (each saves state.pt at its next step boundary), then commit assets/train/sitting.
# Usage: sh assets/train/keep_sitting.sh [STATE_DIR]   (default assets/train_work/v2, as run_all.sh)
set -e
S=${1:-assets/train_work/v2}
if pgrep -f "train.py .*--work $S/" > /dev/null; then
  echo "keep_sitting.sh: a trainer still runs on $S (stop it first: pkill -TERM -f train.py)" >&2; exit 2
fi
for f in llada dream; do
  [ -f $S/$f/state.pt ] || { echo "keep_sitting.sh: no $S/$f/state.pt" >&2; exit 2; }
  mkdir -p assets/train/sitting/$f
  cp $S/$f/state.pt $S/$f/train.log assets/train/sitting/$f/
  [ -f $S/$f/export/train_meta.json ] && cp $S/$f/export/train_meta.json assets/train/sitting/$f/
  echo "kept $f: $(grep -o 'saved at step [0-9]*' $S/$f/train.log | tail -1)"
done
