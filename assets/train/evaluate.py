# Evaluates an exported built-in model on the held-out task files the way the C++ engine decodes ("original" method):
# greedy, n_u = 1, semi-AR blocks of 32, LLaDA confidence / Dream negative entropy with the logit shift, EOS stop.
# Also measures the per-layer share of tokens whose attention context (pre-o_proj) has cosine >= 0.99 between steps.
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe  # noqa: E402
import tasks  # noqa: E402
from family import Family  # noqa: E402
from model import TinyMDLM, load_exported  # noqa: E402

COS_THRESHOLDS = [0.99, 0.995, 0.999]


def load_model(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    fam = Family("llada" if c["model_type"] == "llada" else "dream")
    tok = bpe.load_hf_json(os.path.join(model_dir, "tokenizer.json"))
    if fam.name == "llada":
        mc = {"d": c["d_model"], "n_layers": c["n_layers"], "n_heads": c["n_heads"], "n_kv_heads": c["n_kv_heads"],
              "ffn": c["mlp_hidden_size"], "vocab": c["embedding_size"], "eps": c["rms_norm_eps"], "qkv_bias": False}
    else:
        mc = {"d": c["hidden_size"], "n_layers": c["num_hidden_layers"], "n_heads": c["num_attention_heads"],
              "n_kv_heads": c["num_key_value_heads"], "ffn": c["intermediate_size"], "vocab": c["vocab_size"],
              "eps": c["rms_norm_eps"], "qkv_bias": True}
    mc["head_dim"] = mc["d"] // mc["n_heads"]
    mc["rope_theta"] = c["rope_theta"]
    model = TinyMDLM(mc)
    load_exported(model, fam.name, os.path.join(model_dir, "model.safetensors"))
    model.eval()
    return model, fam, tok, c


def block_candidates(resp, mask_id, gen_length, block):
    """Masked response positions (0-based) of the current semi-AR block; resp: 1-D response ids."""
    done = int((resp != mask_id).sum())
    hi = min(gen_length, block * (done // block + 1))
    return [i for i in range(hi) if int(resp[i]) == mask_id]


def pick(scores, cand, n_u):
    """Indices into cand of the n_u positions to unmask: higher score first, ties to the lower position
    (engine/README.md decision 4). scores[j] is the score of position cand[j]."""
    return sorted(range(len(cand)), key=lambda j: (-float(scores[j]), cand[j]))[:n_u]


def eos_finished(resp, newly, eos_ids, mask_id):
    """A sequence ends when a newly decoded end token has no mask before it, or when no mask is left."""
    ends = [q for q in newly if int(resp[q]) in eos_ids]
    if ends and not (resp[:min(ends)] == mask_id).any():
        return True
    return not (resp == mask_id).any()


@torch.no_grad()
def generate(model, fam, tok, prompts, gen_length=64, block=32, steps=64, cos_stats=None):
    """prompts: list of token-id lists (chat-templated). Returns (response id lists, steps run)."""
    n_u = gen_length // steps
    B = len(prompts)
    mask_id, eos_ids = tok.id(fam.mask), {tok.id(fam.eos), tok.id(fam.end)}
    lp = max(len(p) for p in prompts)
    L = lp + gen_length
    x = torch.full((B, L), tok.id(fam.eos), dtype=torch.long)
    valid = torch.ones(B, L, dtype=torch.bool)
    for i, p in enumerate(prompts):
        x[i, lp - len(p):lp] = torch.tensor(p)
        valid[i, :lp - len(p)] = False
    x[:, lp:] = mask_id
    alive = torch.ones(B, dtype=torch.bool)
    prev_ctx = None
    for s in range(steps):
        if not alive.any():
            break
        ctx = [] if cos_stats is not None else None
        h = model.hidden(x, valid, ctx)
        rows = h[:, lp - 1:lp - 1 + gen_length] if fam.shift else h[:, lp:]
        logits = model.head(rows).float()
        p = logits.softmax(-1)
        top_p, top_tok = p.max(-1)
        score = top_p if fam.name == "llada" else (p * torch.log(p + 1e-10)).sum(-1)
        if cos_stats is not None:
            if prev_ctx is not None:
                both = (alive & prev_alive)[:, None] & valid  # tokens of sequences live in both steps
                for li, (a, b) in enumerate(zip(ctx, prev_ctx)):
                    c = F.cosine_similarity(a, b, dim=-1)[both]
                    st = cos_stats.setdefault(li, {"n": 0, "sum": 0.0, **{str(t): 0 for t in COS_THRESHOLDS}})
                    st["n"] += c.numel()
                    st["sum"] += c.sum().item()
                    for t in COS_THRESHOLDS:
                        st[str(t)] += (c >= t).sum().item()
            prev_ctx, prev_alive = ctx, alive.clone()
        resp = x[:, lp:]
        for i in range(B):
            if not alive[i]:
                continue
            cand = block_candidates(resp[i], mask_id, gen_length, block)
            if not cand:
                alive[i] = False
                continue
            newly = [cand[j] for j in pick(score[i, cand], cand, n_u)]
            for pos in newly:
                resp[i, pos] = top_tok[i, pos]
            if eos_finished(resp[i], newly, eos_ids, mask_id):
                alive[i] = False
        x[:, lp:] = resp
    return [x[i, lp:].tolist() for i in range(B)], s + 1


def response_text(tok, fam, ids):
    ends = {tok.id(fam.eos), tok.id(fam.end)}
    out = []
    for t in ids:
        if t in ends:
            break
        out.append(t)
    return tok.decode(out, skip_special=True)


def evaluate(model_dir, tasks_dir, limit, batch, steps, gen_length=64, block=32, cos=True, shots=None,
             task_names=None):
    model, fam, tok, _ = load_model(model_dir)
    res, cos_stats = {}, {}
    for task in task_names or tasks.TASKS:
        with open(os.path.join(tasks_dir, f"{task}.jsonl")) as f:
            items = [json.loads(l) for l in f][:limit]
        correct = full = 0
        t0 = time.time()
        samples = []
        for b0 in range(0, len(items), batch):
            chunk = items[b0:b0 + batch]
            prompts = [tok.encode(fam.chat(it["prompt"])) for it in chunk]
            outs, _ = generate(model, fam, tok, prompts, gen_length, block, steps, cos_stats if cos else None)
            for it, o in zip(chunk, outs):
                text = response_text(tok, fam, o)
                ok = tasks.final_answer(text) == tasks.final_answer(it["answer"])
                correct += ok
                full += " ".join(text.split()) == " ".join(it["answer"].split())
                if len(samples) < 3:
                    samples.append({"gold": it["answer"], "got": text})
        res[task] = {"n": len(items), "accuracy": correct / len(items), "full_match": full / len(items),
                     "seconds": round(time.time() - t0, 1), "samples": samples}
        print(task, json.dumps(res[task]), flush=True)
    n = sum(r["n"] for r in res.values())
    res["all"] = {"n": n, "accuracy": sum(r["accuracy"] * r["n"] for r in res.values()) / n}
    if cos:
        res["cosine"] = {str(l): {"n": s["n"], "mean": s["sum"] / max(1, s["n"]),
                                  **{f">={t}": s[str(t)] / max(1, s["n"]) for t in COS_THRESHOLDS}}
                         for l, s in cos_stats.items()}
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--tasks", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tasks"))
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--steps", type=int, default=0, help="denoising steps (default: the gen length, n_u = 1)")
    ap.add_argument("--gen-length", type=int, default=64, help="response canvas (256 for the long tasks)")
    ap.add_argument("--task", action="append", default=None,
                    help="task file stem, repeatable (default: the four short tasks; the long ones: mul, sort-long, "
                         "rev-long, word-long with --tasks assets/tasks/long --gen-length 256)")
    ap.add_argument("--no-cos", action="store_true")
    ap.add_argument("--out", default=None, help="write the result JSON here")
    args = ap.parse_args()
    torch.set_num_threads(1)
    res = evaluate(args.model, args.tasks, args.limit, args.batch, args.steps or args.gen_length, args.gen_length,
                   cos=not args.no_cos, task_names=args.task)
    print(json.dumps({k: v for k, v in res.items() if k in ("all", "cosine")}, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
