# How far DyLLM's approximate attention drifts from exact attention on a built-in model: runs the torch reference
# (dyllm_reference.py) on held-out prompts of one task and reports, per layer, over every row that the cosine test
# called stable (not salient), the cosine between its approximate context and exact attention over the same K/V
# caches. Usage: /usr/bin/python3 assets/train/approx_drift.py --model assets/models/tiny-llada --task add [--n 5]
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dyllm_reference import Reference  # noqa: E402
from evaluate import load_model  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--tasks", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tasks"))
    ap.add_argument("--task", default="add")
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--tau", type=float, default=0.99)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model, fam, tok, _ = load_model(args.model)
    ref = Reference(model, fam, tok.id(fam.mask), [tok.id(fam.eos), tok.id(fam.end)], measure_drift=True)
    with open(os.path.join(args.tasks, f"{args.task}.jsonl")) as f:
        items = [json.loads(l) for l in f][:args.n]
    per_layer = {}
    for it in items:
        _, trace = ref.generate(tok.encode(fam.chat(it["prompt"])), tau=args.tau)
        for st in trace:
            for li, lay in enumerate(st["layers"]):
                per_layer.setdefault(li, []).extend(lay["drift_cos"])
    print(f"{args.model} {args.task} n={len(items)} tau={args.tau}: rows called stable, cosine(approximate, exact)")
    print("layer  rows   below tau  below 0.9  min")
    for li, c in sorted(per_layer.items()):
        t = torch.tensor(c)
        print(f"{li:5d} {t.numel():6d} {float((t < args.tau).float().mean()):9.3f} {float((t < 0.9).float().mean()):10.3f}"
              f" {float(t.min()):6.3f}")


if __name__ == "__main__":
    main()
