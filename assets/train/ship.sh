#!/bin/sh
# Ships the models run_all.sh trained: STATE_DIR/<family>/export -> assets/models/tiny-<family>, the task suite the
# models were trained and measured on (STATE_DIR/tasks-v2) -> assets/tasks, then TRAINING.md's results section from
# the evaluations run_all.sh wrote into STATE_DIR (report.py). Refuses exports whose training did not reach its budget
# or that lack the C++ self-test fixture, so a half-trained model is never shipped by accident.
# Usage: sh assets/train/ship.sh STATE_DIR   (from the repository root; then update the floors in
# tests/unit/test_builtin_models.cpp to a few points under the measured figures)
set -e
S=${1:?usage: sh assets/train/ship.sh STATE_DIR}
for f in llada dream; do
  E=$S/$f/export
  grep -q '"final": true' $E/train_meta.json 2>/dev/null ||
    { echo "ship.sh: $E/train_meta.json does not say final: its training has not reached the budget (rerun run_all.sh)" >&2; exit 1; }
  [ -f $E/selftest.json ] ||
    { echo "ship.sh: $E/selftest.json is missing (run_all.sh writes it after training; rerun it to finish)" >&2; exit 1; }
  [ -f $S/engine_eval_$f.jsonl ] ||
    { echo "ship.sh: $S/engine_eval_$f.jsonl is missing (run_all.sh runs eval_engine.sh when build/app/dyllm exists)" >&2; exit 1; }
done
for t in add sort word rev; do
  [ -f $S/tasks-v2/$t.jsonl ] || { echo "ship.sh: $S/tasks-v2/$t.jsonl is missing" >&2; exit 1; }
done
for f in llada dream; do
  cp $S/$f/export/* assets/models/tiny-$f/
done
cp $S/tasks-v2/add.jsonl $S/tasks-v2/sort.jsonl $S/tasks-v2/word.jsonl $S/tasks-v2/rev.jsonl assets/tasks/
/usr/bin/python3 assets/train/report.py --work $S
echo "ship.sh: shipped; set the accuracy floors in tests/unit/test_builtin_models.cpp from TRAINING.md's tables"
