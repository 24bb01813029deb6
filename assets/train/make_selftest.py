# Writes <model>/selftest.json: a few held-out prompts with the chat-templated token ids from this BPE and the
# greedy "original" generation (n_u = 1, block 32, gen 64) of the exported weights in torch. The C++ test
# tests/unit/test_builtin_models.cpp checks its tokenizer and engine against these.
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tasks  # noqa: E402
from evaluate import generate, load_model, response_text  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--tasks", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tasks"))
    ap.add_argument("--per-task", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model, fam, tok, _ = load_model(args.model)
    cases = []
    for t in tasks.TASKS:
        with open(os.path.join(args.tasks, f"{t}.jsonl")) as f:
            items = [json.loads(l) for l in f]
        # items 0 and 4: zero-shot and 4-shot prompts
        for it in [items[0], items[4]][:args.per_task]:
            cases.append({"task": t, "prompt": it["prompt"], "answer": it["answer"],
                          "prompt_ids": tok.encode(fam.chat(it["prompt"]))})
    outs, _ = generate(model, fam, tok, [c["prompt_ids"] for c in cases], 64, 32, 64)
    for c, o in zip(cases, outs):
        c["response_ids"] = o
        c["text"] = response_text(tok, fam, o)
    with open(os.path.join(args.model, "selftest.json"), "w") as f:
        json.dump({"gen_length": 64, "block_length": 32, "steps": 64, "method": "original", "cases": cases}, f)
    for c in cases:
        print(c["task"], repr(c["text"]), "| gold:", c["answer"])


if __name__ == "__main__":
    main()
