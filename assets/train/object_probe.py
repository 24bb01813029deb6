# Does a built-in model carry a word problem's object from the question to the answer? For N training-split word
# problems it masks only the answer's object (every other answer token given, 0 shots) and checks the argmax; then,
# for one question asked with each of the five objects, prints the model's probabilities over the five. A model that
# reads the object gets the first near N/N and a diagonal; one that does not is near N/5 with identical rows
# (TRAINING.md "Worked word problems"). Usage:
#   /usr/bin/python3 assets/train/object_probe.py --model DIR [--format v2|v2-plain|v1] [-n 40]
import argparse
import os
import random
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tasks  # noqa: E402
from evaluate import load_model  # noqa: E402
from train import GEN_LENGTH, response_logits  # noqa: E402


def object_probs(model, fam, tok, query, answer, obj):
    """Probabilities at the answer's last occurrence of the object, with only that token masked."""
    oid = tok.encode(" " + obj)[0]
    prompt = tok.encode(fam.chat("Q: " + query))
    rid = tok.encode(answer) + [tok.id(fam.end)]
    pos = len(rid) - 1 - rid[::-1].index(oid)
    x = rid + [tok.id(fam.eos)] * (GEN_LENGTH - len(rid))
    x[pos] = tok.id(fam.mask)
    ids = torch.tensor([prompt + x])
    with torch.no_grad():
        logits = response_logits(model, fam, model.hidden(ids, torch.ones_like(ids, dtype=torch.bool)), len(prompt))
    return torch.softmax(logits[0, pos].float(), -1), oid


def main():
    ap = argparse.ArgumentParser(description="probe a built-in model's object copy in word problems")
    ap.add_argument("--model", required=True)
    ap.add_argument("--format", default="v2", choices=tasks.DATA_FORMATS)
    ap.add_argument("-n", type=int, default=40)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model, fam, tok, _ = load_model(args.model)
    rng = random.Random(5)
    right = 0
    for _ in range(args.n):
        q, r = tasks.gen_word(rng, args.format)
        obj = next(o for o in tasks.OBJECTS if r.endswith(f" {o}."))
        pr, oid = object_probs(model, fam, tok, q, r, obj)
        right += int(pr.argmax()) == oid
    print(f"object right with every other answer token given: {right}/{args.n} (chance {args.n / 5:.0f})")
    ids = [tok.encode(" " + o)[0] for o in tasks.OBJECTS]
    print("question's object -> p over " + " ".join(tasks.OBJECTS))
    for obj in tasks.OBJECTS:
        q = f"Sam has 11 {obj} and gets 3 more. How many {obj} does Sam have?"
        r = {"v1": "", "v2-plain": "11+3=14, answer "}.get(args.format, f"How many {obj}: 11+3=14, answer ")
        pr, _ = object_probs(model, fam, tok, q, r + f"Sam has 14 {obj}.", obj)
        print(f"  {obj:7s} " + " ".join(f"{float(pr[i]):.2f}" for i in ids))


if __name__ == "__main__":
    main()
