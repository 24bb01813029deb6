# Writes the held-out task suite assets/tasks/<task>.jsonl (format v1; --format v2 --out DIR writes the v2 suite
# elsewhere; --format v3 writes the long tasks of tasks_long.py into assets/tasks/long): {"prompt", "answer", "task",
# "shots"} per line.
# Queries come only from the held-out hash bucket (tasks.is_held_out); item i carries i % 5 solved examples taken from
# the items just before it in the same file (cyclically), the rule app/model/task_suite.cpp uses for --shots K.
import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tasks  # noqa: E402
import tasks_long  # noqa: E402

# v3 suites draw with seeds after the short tasks' (seed + 4 + task index), so no suite repeats another's draws.
LONG_SEED_OFFSET = len(tasks.TASKS)


def build(task, n, seed, fmt="v1"):
    rng = random.Random(seed)
    seen, items = set(), []
    while len(items) < n:
        if fmt == "v3":
            q, a = tasks_long.sample(rng, task, held_out=True)
        else:
            q, a = tasks.sample(rng, task, held_out=True, fmt=fmt)
        if tasks.split_key(q) in seen:  # one item per held-out problem (sort multisets, unordered add pairs)
            continue
        seen.add(tasks.split_key(q))
        items.append((q, a))
    out = []
    for i, (q, a) in enumerate(items):
        k = i % 5
        shots = [items[(i - k + j) % n] for j in range(k)]
        out.append({"prompt": tasks.format_prompt(shots, q), "answer": a, "task": task, "shots": k})
    return out


def main():
    ap = argparse.ArgumentParser()
    shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tasks")
    ap.add_argument("--out", default=None, help="directory to write (default for v1: assets/tasks, for v3: "
                                                   "assets/tasks/long)")
    ap.add_argument("--format", default="v1", choices=tasks.FORMATS, help="task data format (TRAINING.md)")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--seed", type=int, default=12345)
    args = ap.parse_args()
    if args.out is None and args.format == "v3":  # a subdirectory: `dyllm eval --task all` on assets/tasks skips it
        args.out = os.path.join(shipped, "long")
    if args.out is None:
        if args.format != "v1":  # assets/tasks is what the shipped (v1) models are tested on
            sys.exit(f"make_tasks.py: --format {args.format} needs --out DIR (assets/tasks holds the shipped v1 suite)")
        args.out = shipped
    os.makedirs(args.out, exist_ok=True)
    names = tasks_long.LONG_TASKS if args.format == "v3" else tasks.TASKS
    for i, t in enumerate(names):
        rows = build(t, args.n, args.seed + i + (LONG_SEED_OFFSET if args.format == "v3" else 0), args.format)
        for r in rows:  # by construction, re-checked: the query (last "Q: " line) is in the held-out bucket
            assert tasks.is_held_out(r["prompt"].rsplit("Q: ", 1)[1])
        with open(os.path.join(args.out, f"{t}.jsonl"), "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        print(t, len(rows))


if __name__ == "__main__":
    main()
