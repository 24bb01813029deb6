# Trains one built-in model (tiny-llada or tiny-dream) on the synthetic task suite with the LLaDA SFT objective and
# exports it in the family's real checkpoint format. Reproduce: see assets/train/TRAINING.md (one command per model).
import argparse
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe  # noqa: E402
import tasks  # noqa: E402
from family import Family  # noqa: E402
from model import TinyMDLM, export_names, write_safetensors  # noqa: E402

GEN_LENGTH = 64  # response canvas: the engine's default gen_length (every answer + end token must fit)
# Shot-count mix: cheaper short prompts most often (they teach the tasks), but 4-shot prompts, the shape the goals are
# measured on (prompt about 4x the response), get a fifth of the batches so the model learns to find the last query.
SHOT_WEIGHTS = [0.45, 0.15, 0.1, 0.1, 0.2]
# The BPE corpus keeps its own mix so the tokenizer does not change when the training mix is tuned.
TOKENIZER_SHOT_WEIGHTS = [0.55, 0.2, 0.1, 0.1, 0.05]
N_MERGES = 200  # BPE merges: 256 bytes + 200 merges + specials ~ 460 tokens (brief asks for a 300-600 vocabulary)


def build_tokenizer(fam, seed):
    rng = random.Random(seed)
    texts = ["system\nYou are a helpful assistant.\nuser\n", "assistant\n\n", "user\n\n"] * 200
    for _ in range(6000):
        t = tasks.pick_task(rng)
        k = rng.choices(range(5), TOKENIZER_SHOT_WEIGHTS)[0]
        p, r = tasks.sample_example(rng, t, k)
        texts += [p, r]
    merges = bpe.train_bpe(texts, N_MERGES)
    return bpe.Tokenizer(merges, fam.specials)


def make_batch(rng, fam, tok, batch):
    """Returns ids [B, Lp+R], key_valid, targets [B, R], prompt length Lp. Prompts are left-padded (RoPE is relative,
    padded keys are masked out, so this equals running each prompt unpadded)."""
    k = rng.choices(range(5), SHOT_WEIGHTS)[0]
    eos, end = tok.id(fam.eos), tok.id(fam.end)
    prompts, resps = [], []
    for _ in range(batch):
        t = tasks.pick_task(rng)
        p, r = tasks.sample_example(rng, t, k)
        prompts.append(tok.encode(fam.chat(p)))
        rid = tok.encode(r) + [end]
        assert len(rid) <= GEN_LENGTH, f"response too long ({len(rid)} tokens): {r!r}"
        resps.append(rid + [eos] * (GEN_LENGTH - len(rid)))
    lp = max(len(p) for p in prompts)
    ids = torch.full((batch, lp + GEN_LENGTH), eos, dtype=torch.long)
    valid = torch.ones(batch, lp + GEN_LENGTH, dtype=torch.bool)
    for i, p in enumerate(prompts):
        ids[i, lp - len(p):lp] = torch.tensor(p)
        valid[i, :lp - len(p)] = False
    tgt = torch.tensor(resps)
    return ids, valid, tgt, lp, k


def response_logits(model, fam, h, lp):
    # Dream predicts position i from hidden row i-1 (engine/README.md §c.2 logit shift); LLaDA from row i.
    rows = h[:, lp - 1:lp - 1 + GEN_LENGTH] if fam.shift else h[:, lp:lp + GEN_LENGTH]
    return model.head(rows)


def export(model, fam, tok, mc, out_dir, meta):
    os.makedirs(out_dir, exist_ok=True)
    write_safetensors(os.path.join(out_dir, "model.safetensors"), export_names(model, fam.name))
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(fam.config_json(mc, tok, 4096), f, indent=2)
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump(fam.tokenizer_config(tok), f, indent=2)
    with open(os.path.join(out_dir, "train_meta.json"), "w") as f:
        json.dump(meta, f, indent=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", required=True, choices=["llada", "dream"])
    ap.add_argument("--out", required=True, help="model directory to export into")
    ap.add_argument("--work", required=True, help="scratch dir for logs/checkpoints")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--wall-minutes", type=float, default=80.0, help="wall budget; cosine LR runs on wall fraction")
    ap.add_argument("--max-steps", type=int, default=1000000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=None)
    ap.add_argument("--ffn", type=int, default=344)
    ap.add_argument("--export-every-min", type=float, default=10.0)
    ap.add_argument("--resume", default=None, help="continue from a ckpt.pt (model weights; fresh optimizer)")
    ap.add_argument("--warmup", type=int, default=100, help="linear warmup steps (experiment run B: 100)")
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    fam = Family(args.family)
    os.makedirs(args.work, exist_ok=True)
    tok = build_tokenizer(fam, seed=1000 + 0)  # same corpus/merges for both families
    kv = args.kv_heads or (args.heads if fam.name == "llada" else max(1, args.heads // 2))
    mc = {"d": args.d, "n_layers": args.layers, "n_heads": args.heads, "n_kv_heads": kv,
          "head_dim": args.d // args.heads, "ffn": args.ffn, "vocab": len(tok),
          "eps": 1e-5 if fam.name == "llada" else 1e-6, "rope_theta": 10000.0, "qkv_bias": fam.name == "dream"}
    model = TinyMDLM(mc)
    step0 = 0
    if args.resume:
        ck = torch.load(args.resume)
        model.load_state_dict(ck["model"])
        step0 = ck["step"]
        print(f"resumed from {args.resume} at step {step0}", flush=True)
    print(f"family={fam.name} vocab={len(tok)} params={model.n_params()} cfg={mc}", flush=True)

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    rng = random.Random(args.seed)
    mask_id = tok.id(fam.mask)
    wall = args.wall_minutes * 60
    t0 = time.time()
    last_export = t0
    ema, log = None, []
    step = 0
    while True:
        elapsed = time.time() - t0
        frac = max(step / args.max_steps, elapsed / wall)
        if frac >= 1.0:
            break
        warm = args.warmup
        lr = args.lr * min(1.0, (step + 1) / warm) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        ids, valid, tgt, lp, k = make_batch(rng, fam, tok, args.batch)
        B = ids.shape[0]
        t = torch.rand(B, 1) * (1 - 1e-3) + 1e-3  # t ~ U(1e-3, 1]
        masked = torch.rand(B, GEN_LENGTH) < t
        x = ids.clone()
        x[:, lp:] = torch.where(masked, torch.full_like(tgt, mask_id), tgt)
        h = model.hidden(x, valid)
        logits = response_logits(model, fam, h, lp)
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), reduction="none").view(B, -1)
        loss = (ce * masked / t).sum() / (B * GEN_LENGTH)  # LLaDA SFT: CE/t over masked response tokens
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
        if step % 50 == 0:
            rec = {"step": step, "s": round(time.time() - t0, 1), "lr": lr, "loss_ema": round(ema, 4), "k": k, "lp": lp}
            log.append(rec)
            print(json.dumps(rec), flush=True)
        if time.time() - last_export > args.export_every_min * 60:
            last_export = time.time()
            export(model, fam, tok, mc, args.out, {"step": step, "step0": step0, "seconds": time.time() - t0, "final": False,
                                                  "loss_ema": ema, "args": vars(args), "log": log})
            torch.save({"model": model.state_dict(), "step": step0 + step}, os.path.join(args.work, "ckpt.pt"))
            print(f"exported at step {step}", flush=True)
    export(model, fam, tok, mc, args.out, {"step": step, "step0": step0, "seconds": time.time() - t0, "final": True,
                                          "loss_ema": ema, "args": vars(args), "log": log})
    torch.save({"model": model.state_dict(), "step": step0 + step}, os.path.join(args.work, "ckpt.pt"))
    print(f"done: {step} steps in {time.time() - t0:.0f}s, final loss_ema {ema:.4f}", flush=True)


if __name__ == "__main__":
    main()
