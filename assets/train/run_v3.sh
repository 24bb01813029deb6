#!/bin/sh
# Starts, or resumes, the training of the LLaDA-format v3 model (TRAINING.md, "v3") in the background: lowest priority,
# its own process group (stop it with SIGTERM to the group: the state is saved at the next step boundary; SIGSTOP /
# SIGCONT pause it), state in assets/train/state/llada-v3.pt (resumed when present, replaced in place every 10 minutes).
# Usage: sh assets/train/run_v3.sh [WORK_DIR [PGID_FILE [TRAIN_OPTION...]]]   (from the repository root)
#   WORK_DIR   lock, log (WORK_DIR/train.log) and exported weights (WORK_DIR/export); default assets/train_work/v3
#   PGID_FILE  where to write the trainer's process-group id (e.g. /tmp/train.pgid); default WORK_DIR/train.pgid
#   TRAIN_OPTION  further train.py options that are not part of the recipe (e.g. --device cuda, --budget-steps N)
set -e
W=${1:-assets/train_work/v3}
P=${2:-$W/train.pgid}
[ $# -ge 2 ] && shift 2 || shift $#
PY=/usr/bin/python3   # Debian's python3-torch
if ! $PY -c "import torch" 2>/dev/null; then
  echo "run_v3.sh: $PY cannot import torch (apt-get install python3-torch)" >&2; exit 2
fi
[ -f assets/train/train.py ] || { echo "run_v3.sh: run it from the repository root" >&2; exit 2; }
# The best OpenBLAS kernel set the CPU has (run_all.sh explains why); the trainer's environment only.
CORE=
if grep -qw avx512f /proc/cpuinfo; then CORE=SkylakeX; elif grep -qw avx2 /proc/cpuinfo; then CORE=Haswell; fi
mkdir -p "$W"
# The v3 recipe; a resume must repeat it exactly (train.py refuses another shape, data format, batch or LR).
RECIPE="--family llada --format v3 --d 192 --layers 8 --heads 6 --ffn 512 --batch 32 --long-batch 16 --lr 1.5e-3
  --warmup 500 --budget-steps 40000"
setsid nohup env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ${CORE:+OPENBLAS_CORETYPE=$CORE} OPENBLAS_NUM_THREADS=1 \
    OMP_NUM_THREADS=1 nice -n 19 $PY assets/train/train.py $RECIPE --state assets/train/state/llada-v3.pt \
    --save-every-min 10 --export-every-min 30 --log-every 10 --work "$W" --out "$W/export" --pgid-file "$P" "$@" \
    >> "$W/train.log" 2>&1 < /dev/null &
echo "run_v3.sh: trainer starting; its process-group id goes to $P, its log to $W/train.log"
