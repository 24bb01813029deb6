#!/bin/sh
# The accuracy goals as the C++ engine measures them (`dyllm eval`, 50 held-out items per task, 4-shot prompts,
# n_u = 1): original decoding and DyLLM at each tau of the accuracy-vs-tau curve, for both built-in models; then the
# engine-vs-torch DyLLM cross-check (compare_dyllm.py). Writes assets/train_work/engine_eval_<family>.jsonl and
# dyllm_check_<family>.json, which report.py renders into TRAINING.md.
# Usage: sh assets/train/eval_engine.sh [path/to/dyllm]   (run from the repository root; default build/app/dyllm)
set -e
EXE=${1:-build/app/dyllm}
W=assets/train_work
mkdir -p $W
for f in llada dream; do
  M=assets/models/tiny-$f
  out=$W/engine_eval_$f.jsonl
  : > $out
  $EXE eval -m $M --task all --limit 50 --shots 4 --method original --json >> $out
  for tau in 0.95 0.98 0.99 0.995 0.999; do
    $EXE eval -m $M --task all --limit 50 --shots 4 --method dyllm --tau $tau --json >> $out
  done
  # The paper's "Salient" ablation at the family's default tau: exact attention for every query, FFN skipping only.
  $EXE eval -m $M --task all --limit 50 --shots 4 --method dyllm --no-approx --json >> $out
  /usr/bin/python3 assets/train/compare_dyllm.py --dyllm $EXE --model $M --per-task 3 \
      --tau "$( [ $f = llada ] && echo 0.99 || echo 0.995 )" --out $W/dyllm_check_$f.json > /dev/null || true
done
