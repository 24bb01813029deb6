#!/bin/sh
# The accuracy goals as the C++ engine measures them (`dyllm eval`, 50 held-out items per task, 4-shot prompts,
# n_u = 1): original decoding and DyLLM at each tau of the accuracy-vs-tau curve, for both built-in models; then the
# engine-vs-torch DyLLM cross-check (compare_dyllm.py) and the layer-wise figures (`dyllm report`). Writes
# assets/train_work/engine_eval_<family>.jsonl, dyllm_check_<family>.json and report_<family>/, which report.py renders
# into TRAINING.md.
# Usage: sh assets/train/eval_engine.sh [path/to/dyllm [MODEL_PATTERN TASKS_DIR OUT_DIR]]   (from the repository root;
# defaults build/app/dyllm, assets/models/tiny-%f, assets/tasks, assets/train_work; %f in MODEL_PATTERN = the family)
set -e
EXE=${1:-build/app/dyllm}
PATTERN=${2:-assets/models/tiny-%f}
TASKS=${3:-assets/tasks}
W=${4:-assets/train_work}
mkdir -p $W
for f in llada dream; do
  M=$(echo "$PATTERN" | sed "s/%f/$f/g")
  out=$W/engine_eval_$f.jsonl
  : > $out
  E="$EXE eval -m $M --tasks-dir $TASKS --task all --limit 50 --shots 4 --json -t 1"
  $E --method original >> $out
  for tau in 0.95 0.98 0.99 0.995 0.999; do
    $E --method dyllm --tau $tau >> $out
  done
  # The paper's "Salient" ablation at the family's default tau: exact attention for every query, FFN skipping only.
  $E --method dyllm --no-approx >> $out
  # The studio's default stable-row update (engine/README.md decision 12) at the family's default tau.
  $E --method dyllm --approx-incremental >> $out
  # The layer-wise picture (report.py's per-layer cosine and L_sal table): DyLLM at the family's default tau on 10
  # prompts per task; the accuracy sweep it also draws is kept to one item (dyllm eval above measured accuracy).
  $EXE report -m $M --tasks-dir $TASKS -o $W/report_$f --probe 10 --limit 1 --taus 0.99 > /dev/null
  /usr/bin/python3 assets/train/compare_dyllm.py --dyllm $EXE --model $M --tasks $TASKS --per-task 3 \
      --tau "$( [ $f = llada ] && echo 0.99 || echo 0.995 )" --out $W/dyllm_check_$f.json > /dev/null || true
done
