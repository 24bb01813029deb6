# Writes the measured part of assets/train/TRAINING.md (between the RESULTS markers) from the training metadata
# (assets/models/tiny-*/train_meta.json) and the evaluation JSON (assets/train_work/eval_*.json, or --work DIR). Each
# model directory's MODEL.md links to it.
import argparse
import csv
import json
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DOC = os.path.join(ROOT, "assets", "train", "TRAINING.md")
BEGIN, END = "<!-- RESULTS BEGIN (report.py) -->", "<!-- RESULTS END -->"


def model_section(fam, work):
    name = f"tiny-{fam}"
    out = [f"### {name}", ""]
    meta_p = os.path.join(ROOT, "assets", "models", name, "train_meta.json")
    if not os.path.exists(meta_p):
        return out + ["(not trained)", ""]
    meta = json.load(open(meta_p))
    a = meta["args"]
    log = meta["log"]
    m1_p = os.path.join(work, f"meta1_{fam}.json")
    if "train_hours" in meta:  # resumable train.py: budget in steps or training (CPU) hours, possibly several runs
        out.append(f"- steps: {meta['step']} (budget: {meta['budget_steps'] or '-'} steps, "
                   f"{meta['budget_hours'] or '-'} h), training time {meta['train_hours']:.2f} h (CPU time of the "
                   f"process; {meta['wall_hours']:.2f} h wall in steps) over {meta['runs']} run(s), final loss "
                   f"(EMA): {meta['loss_ema']:.4f}, batch {a['batch']}, lr {a['lr']}, format {a['format']}, seed "
                   f"{a['seed']}")
        log = [dict(r, s=r["train_h"] * 3600) for r in log]
    elif meta.get("step0", 0) > 0 and os.path.exists(m1_p):  # two phases: main run + continuation (--resume)
        m1 = json.load(open(m1_p))
        out.append(f"- phase 1: {m1['step']} steps, {m1['seconds'] / 60:.1f} min, batch {m1['args']['batch']}, "
                   f"lr {m1['args']['lr']} (warmup {m1['args'].get('warmup', 100)}, cosine to 0.1x), seed "
                   f"{m1['args']['seed']}, loss (EMA) {m1['loss_ema']:.4f}")
        out.append(f"- phase 2 (continuation, fresh AdamW): {meta['step']} steps, {meta['seconds'] / 60:.1f} min, "
                   f"lr {a['lr']} (warmup {a['warmup']}, cosine to 0.1x), data seed {a['seed']}, final loss (EMA) "
                   f"{meta['loss_ema']:.4f}")
        log = m1["log"] + [dict(r, step=r["step"] + meta["step0"], s=r["s"] + m1["seconds"]) for r in log]
    else:
        out.append(f"- steps: {meta['step']}, wall: {meta['seconds'] / 60:.1f} min, final loss (EMA): "
                   f"{meta['loss_ema']:.4f}, batch {a['batch']}, lr {a['lr']}, seed {a['seed']}")
    if log:
        idx = sorted({int(i * (len(log) - 1) / 11) for i in range(12)})
        unit = "training minutes" if "train_hours" in meta else "minutes"
        out += ["", f"| step | {unit} | loss (EMA) | lr |", "|--:|--:|--:|--:|"]
        for i in idx:
            r = log[i]
            out.append(f"| {r['step']} | {r['s'] / 60:.1f} | {r['loss_ema']:.4f} | {r['lr']:.2e} |")
    ev_p = os.path.join(work, f"eval_{fam}.json")
    if os.path.exists(ev_p):
        ev = json.load(open(ev_p))
        out += ["", "Held-out accuracy (torch, original decoding: greedy, n_u = 1, gen 64, block 32; "
                "final-answer exact match / whole-response exact match):", "",
                "| task | n | accuracy | full match |", "|---|--:|--:|--:|"]
        for t in ["add", "sort", "word", "rev"]:
            if t in ev:
                out.append(f"| {t} | {ev[t]['n']} | {ev[t]['accuracy']:.2f} | {ev[t]['full_match']:.2f} |")
        out.append(f"| **all** | {ev['all']['n']} | **{ev['all']['accuracy']:.3f}** | |")
        if "cosine" in ev:
            out += ["", "Attention-context cosine between consecutive steps (all non-pad tokens of live sequences, "
                    "pooled over steps; share of tokens at or above each threshold):", "",
                    "| layer | tokens | mean cos | >= 0.99 | >= 0.995 | >= 0.999 |", "|--:|--:|--:|--:|--:|--:|"]
            for l, s in sorted(ev["cosine"].items(), key=lambda kv: int(kv[0])):
                out.append(f"| {l} | {s['n']} | {s['mean']:.4f} | {s['>=0.99']:.3f} | {s['>=0.995']:.3f} | "
                           f"{s['>=0.999']:.3f} |")
    out += engine_section(fam, work)
    out += layer_section(fam, work)
    out.append("")
    return out


def layer_section(fam, work):
    """The paper's layer-wise picture as the engine measures it (`dyllm report`, run by eval_engine.sh): per layer, the
    share of tested rows whose attention context keeps cosine >= 0.99 between consecutive steps, and mean L_sal."""
    d = os.path.join(work, f"report_{fam}")
    cos_p, lsal_p = os.path.join(d, "cosine_by_layer.csv"), os.path.join(d, "lsal_by_layer.csv")
    if not (os.path.exists(cos_p) and os.path.exists(lsal_p)):
        return []
    stable, rows = {}, {}
    for r in csv.DictReader(open(cos_p)):
        l, n = int(r["layer"]), int(r["rows"])
        rows[l] = rows.get(l, 0) + n
        if float(r["one_minus_cos_hi"]) <= 0.01 * (1 + 1e-9):  # the bins end on half decades: 1e-2 is an edge
            stable[l] = stable.get(l, 0) + n
    lsal = {}
    for r in csv.DictReader(open(lsal_p)):
        lsal.setdefault(r["update"], {})[int(r["layer"])] = (float(r["lsal_mean"]), r["tau"])
    updates = sorted(lsal, key=lambda u: u != "authors")  # the authors' update first
    taus = {u: next(iter(lsal[u].values()))[1] for u in updates}
    out = ["", "Layer-wise picture measured by the engine (`dyllm report --probe 10`: DyLLM at the family's default "
           "tau on 10 held-out 4-shot prompts per task; cosine between the attention contexts of consecutive steps "
           "over the rows each sparse step tests; L_sal = salient rows / tested rows, mean over sparse steps):", "",
           "| layer | rows tested | cos >= 0.99 | " + " | ".join(f"L_sal, {u} update (tau {taus[u]})" for u in updates)
           + " |", "|--:|--:|--:|" + "--:|" * len(updates)]
    for l in sorted(rows):
        cells = [f"{100 * lsal[u][l][0]:.1f}%" if l in lsal[u] else "" for u in updates]
        share = stable.get(l, 0) / rows[l] if rows[l] else float("nan")
        out.append(f"| {l} | {rows[l]} | {share:.3f} | " + " | ".join(cells) + " |")
    return out


def engine_section(fam, work):
    """The goals as the C++ engine measures them (eval_engine.sh): `dyllm eval --shots 4`, original and DyLLM."""
    p = os.path.join(work, f"engine_eval_{fam}.jsonl")
    if not os.path.exists(p):
        return []
    runs = {}
    for r in map(json.loads, open(p)):
        key = "original" if r["method"] == "original" else f"dyllm tau {r['tau']:.3f}".rstrip("0")
        if not r.get("approx", True):
            key += " (Salient ablation: exact attention)"
        elif r.get("approx_incremental", False):
            key += " (incremental update: the studio's default)"
        runs.setdefault(key, []).append(r)
    out = ["", "Held-out accuracy measured by the C++ engine (`dyllm eval --task all --limit 50 --shots 4`, greedy, "
           "n_u = 1, gen 64, block 32; all held-out addition operand pairs are unseen in training; tokens/s at `-t 1` "
           "on the 2-core CPU of the run, an AMD EPYC with AVX2):", "",
           "| method | add | sort | word | rev | **all** | tokens/s |", "|---|--:|--:|--:|--:|--:|--:|"]
    for key, rs in runs.items():
        by = {r["task"]: r for r in rs}
        n = sum(r["n"] for r in rs)
        acc = sum(r["accuracy"] * r["n"] for r in rs) / n
        toks = sum(r["tokens_per_s"] * r["denoise_s"] for r in rs) / sum(r["denoise_s"] for r in rs)
        cells = [f"{by[t]['accuracy']:.2f}" if t in by else "" for t in ["add", "sort", "word", "rev"]]
        out.append(f"| {key} | " + " | ".join(cells) + f" | **{acc:.3f}** | {toks:.0f} |")
    chk = os.path.join(work, f"dyllm_check_{fam}.json")
    if os.path.exists(chk):
        s = json.load(open(chk))["summary"]
        out += ["", f"Engine vs the independent torch DyLLM (`compare_dyllm.py`, tau {s['tau']}): {s['prompts_ok']}/"
                f"{s['prompts']} prompts ({s['steps']} steps) agree; largest cosine difference "
                f"{s['max_abs_cos_diff']:.1e}, salient-set differences only on rows within 1e-4 of tau "
                f"({s['set_flips_near_tau']})."]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default=os.path.join(ROOT, "assets", "train_work"),
                    help="directory of eval_<family>.json, engine_eval_<family>.jsonl, dyllm_check_<family>.json")
    args = ap.parse_args()
    body = [BEGIN, ""] + model_section("llada", args.work) + model_section("dream", args.work) + [END]
    doc = open(DOC).read()
    a, b = doc.index(BEGIN), doc.index(END) + len(END)
    doc = doc[:a] + "\n".join(body) + doc[b:]
    open(DOC, "w").write(doc)
    print("wrote", DOC)


if __name__ == "__main__":
    main()
