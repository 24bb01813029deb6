#!/usr/bin/env python3
"""Turns performance_report.sh's bench files into docs/performance.md and refreshes the README's table.

Every ratio is taken within one `dyllm bench` run (the methods of a cell run one after the other in one process),
then the median over rounds: a ratio never mixes runs. Tokens/s are medians over rounds of each run's median.

  performance_report.py WORK OUT NOTES [--readme README.md]
"""
import glob
import json
import os
import re
import statistics
import sys

METHODS = ["original", "dyllm", "fast-dual", "fast-prefix", "dllm-cache", "dkv-decode", "dkv-greedy", "d2cache",
           "sparse-dllm", "elastic-cache"]
CELLS = ["tiny-llada", "tiny-dream", "hidden-256"]
FAR_CORES_NS = 80.0  # app/model/core_latency.h kFarCoresNs
BEGIN, END = "<!-- performance-table:begin -->", "<!-- performance-table:end -->"
med = statistics.median


def load_rows(path):
    rows = json.load(open(path))
    rows = rows["results"] if isinstance(rows, dict) else rows
    return {r["method"]: r for r in rows}


def backend_line(log_path):
    """The backend as `dyllm bench` names it on stderr ("cpu (2 threads, OpenBLAS 0.3.21 ...)")."""
    for line in open(log_path):
        m = re.search(r"backend (.*?), \d+ configurations", line)
        if m:
            return m.group(1)
    return "-"


def cells(work):
    """{(name, threads): [rows of each round]} and the backend text of each thread count."""
    out, backends = {}, {}
    for path in sorted(glob.glob(os.path.join(work, "bench_*_t*_r*.json"))):
        name, threads, _ = re.match(r"bench_(.+)_t(\d+)_r(\d+)\.json", os.path.basename(path)).groups()
        out.setdefault((name, int(threads)), []).append(load_rows(path))
        backends[int(threads)] = backend_line(path[:-5] + ".log")
    return out, backends


def ratio(runs, f):
    return med([f(r) for r in runs])


def span(values, fmt="{:.1f}"):
    v = sorted(values)
    return fmt.format(med(v)) if len(v) == 1 or v[0] == v[-1] else \
        f"{fmt.format(med(v))} ({fmt.format(v[0])}-{fmt.format(v[-1])})"


def summary_table(data):
    """One row per model and thread count: tokens/s of every method, its speed-up over original in the same run."""
    head = ("| model, threads | original tok/s | dense steps % of GEMM probe | "
            + " | ".join(f"{m} tok/s (x original)" for m in METHODS[1:])
            + " | dyllm / fast-dual tok/s (FLOP ratio) |")
    lines = [head, "|---|--:|--:|" + "--:|" * (len(METHODS) - 1) + "--:|"]
    for name in CELLS:
        for t in (1, 2):
            runs = data.get((name, t))
            if not runs:
                continue
            o = [r["original"] for r in runs]
            cols = [f"{med(x['tokens_per_s'] for x in o):.1f}",
                    f"{med(x['pct_sgemm_dense'] for x in o if x['pct_sgemm_dense'] is not None):.0f}%"]
            for m in METHODS[1:]:
                cols.append(f"{med(r[m]['tokens_per_s'] for r in runs):.1f} "
                            f"({ratio(runs, lambda r: r[m]['tokens_per_s'] / r['original']['tokens_per_s']):.2f}x)")
            tps = ratio(runs, lambda r: r["dyllm"]["tokens_per_s"] / r["fast-dual"]["tokens_per_s"])
            flop = ratio(runs, lambda r: r["fast-dual"]["flops_per_token"] / r["dyllm"]["flops_per_token"])
            lines.append(f"| {name}, `-t {t}` | " + " | ".join(cols) + f" | {tps:.2f} ({flop:.2f}) |")
    return lines


def detail_tables(data):
    out = []
    for name in CELLS:
        for t in (1, 2):
            runs = data.get((name, t))
            if not runs:
                continue
            out += [f"### {name}, {t} thread{'s' if t > 1 else ''}", "",
                    "| method | tau | tok/s (min-max over rounds) | x original tok/s | GFLOP/s | x original GFLOP/s | "
                    "FLOPs/token | FLOPs vs dense | rows recomputed | cache MiB |",
                    "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
            for m in METHODS:
                rs = [r[m] for r in runs]
                tau = rs[0].get("tau")
                out.append(
                    f"| {m} | {'-' if tau is None else f'{tau:g}'} | {span([x['tokens_per_s'] for x in rs])} | "
                    f"{ratio(runs, lambda r: r[m]['tokens_per_s'] / r['original']['tokens_per_s']):.2f} | "
                    f"{med(x['gflops'] for x in rs):.1f} | "
                    f"{ratio(runs, lambda r: r[m]['gflops'] / r['original']['gflops']):.2f} | "
                    f"{med(x['flops_per_token'] for x in rs):.3g} | {med(x['flops_vs_dense'] for x in rs):.3f} | "
                    f"{med(x['recompute_fraction'] for x in rs):.3f} | {med(x['cache_bytes'] for x in rs) / 2**20:.2f} |")
            out.append("")
    return out


def probe_table(data):
    lines = ["| model, threads | GEMM probe GFLOP/s | system BLAS sgemm GFLOP/s | probe on 1 thread | "
             "cross-core ns, one way (rounds far apart) |", "|---|--:|--:|--:|--:|"]
    for name in CELLS:
        for t in (1, 2):
            runs = data.get((name, t))
            if not runs:
                continue
            o = [r["original"] for r in runs]
            blas = [x["blas_sgemm_gflops"] for x in o if x.get("blas_sgemm_gflops") is not None]
            one = [x["sgemm_1thread_gflops"] for x in o if x.get("sgemm_1thread_gflops") is not None]
            cc = [[s["cross_core_ns"] for m in r.values() for s in m.get("samples", [])
                   if s.get("cross_core_ns") is not None] for r in runs]
            cc = [v for v in cc if v]
            cores = "-" if not cc else \
                f"{med(med(v) for v in cc):.0f} ({sum(1 for v in cc if max(v) >= FAR_CORES_NS)} of {len(runs)})"
            lines.append(f"| {name}, `-t {t}` | {med(x['sgemm_gflops'] for x in o):.1f} | "
                         f"{f'{med(blas):.1f}' if blas else '-'} | {f'{med(one):.1f}' if one else '-'} | {cores} |")
    return lines


def real_size(work):
    p = os.path.join(work, "real.run.json")
    if not os.path.exists(p):
        return ["Not run (`--real-size`: needs ~17 GB of free memory)."]
    d = json.load(open(p))
    layers = open(os.path.join(work, "real.layers")).read().split(":")[-1].strip() \
        if os.path.exists(os.path.join(work, "real.layers")) else "32"
    out = [f"LLaDA-8B shape (d 4096, 32 heads, FFN 12288, vocabulary 126464; {layers} layers), random bf16 weights, "
           "25 prompt + 8 response rows, DyLLM, 2 threads (`tests/bench/bench_real_size.sh`); "
           f"backend {d.get('kernels', d['backend'])}, load {d['load_s']:.1f} s.", "",
           "| step | kind | seconds | GFLOP | GFLOP/s | layer-0 query rows |", "|--:|---|--:|--:|--:|--:|"]
    for s in d["accounting"]["steps"]:
        out.append(f"| {s['step']} | {s['kind']} | {s['seconds']:.3f} | {s['flops'] / 1e9:.1f} | "
                   f"{s['flops'] / s['seconds'] / 1e9:.1f} | {s['layers'][0]['query_rows']} |")
    for line in open(os.path.join(work, "real.time.txt")):
        if "Maximum resident" in line:
            out += ["", f"Peak resident memory: {int(line.split(':')[-1]) / 2**20:.1f} GiB."]
    types = os.path.join(work, "real_types.md")
    if os.path.exists(types):
        out += ["", "### At each storage type", ""] + open(types).read().rstrip("\n").split("\n")
    return out


def quant_logits(work):
    """Per storage type, the first step's logit error against f32 on each width bench_quant_logits measured."""
    p = os.path.join(work, "logits.jsonl")
    if not os.path.exists(p):
        return []
    rows = [json.loads(line) for line in open(p) if line.strip()]
    widths = sorted({r["n_embd"] for r in rows})
    types = list(dict.fromkeys(r["type"] for r in rows))
    by = {(r["n_embd"], r["type"]): r for r in rows}
    head = "| weights | " + " | ".join(f"width {w}: rel. rms / KL (nats) / same argmax" for w in widths) + " |"
    out = [head, "|---|" + "--:|" * len(widths)]
    for t in types:
        cells = []
        for w in widths:
            r = by.get((w, t))
            cells.append("-" if r is None else f"{r['rel_rms']:.2e} / {r['kl']:.1e} / {100 * r['top1']:.0f}%")
        out.append(f"| {t} | " + " | ".join(cells) + " |")
    return out


def quant_logits_caption(work):
    p = os.path.join(work, "logits.jsonl")
    if not os.path.exists(p):
        return "Not run (`tests/bench/bench_quant_logits` was not built)."
    return ("One dense step (original decoding) of a random LLaDA-format checkpoint stored at f32 and re-stored in "
            "memory at each type (`dyllm bench --type`'s path), the same 64-id prompt and 32 masked rows: the logits' "
            "rms error relative to the f32 logits' rms, the mean KL divergence of the softmax from f32's, and the "
            "share of rows whose argmax is f32's (`tests/bench/bench_quant_logits`). Width 256 is hidden-256 "
            "(4 layers); width 4096 has 2 layers of the LLaDA-8B shape and a vocabulary of 8192.")


def official(work):
    p = os.path.join(work, "official.jsonl")
    if not os.path.exists(p):
        return ["Not run (`--fast-dllm DIR`: the `llada/` directory of an NVlabs/Fast-dLLM checkout and Debian's "
                "torch)."]
    theirs = {r["method"]: r for r in map(json.loads, filter(str.strip, open(p)))}
    ours = load_rows(os.path.join(work, "bench_official_t1_r1.json"))
    torch = next(iter(theirs.values()))["torch"]
    out = [f"hidden-256, 1 thread, gen 64, steps 64, block 32. The official decoders run unmodified on torch {torch} "
           "(`tests/bench/official_llada.py`); the engine's `dyllm bench` in the same window.", "",
           "| method | official tok/s | same tokens as the engine | dyllm-studio tok/s | ratio |",
           "|---|--:|:-:|--:|--:|"]
    for m in ("original", "fast-dual"):
        if m in theirs:
            r = theirs[m]
            same = {True: "yes", False: f"no ({r.get('positions_differing')} positions)"}.get(
                r.get("same_tokens_as_engine"), "-")
            out.append(f"| {m} | {r['tokens_per_s']:.1f} | {same} | {ours[m]['tokens_per_s']:.1f} | "
                       f"{ours[m]['tokens_per_s'] / r['tokens_per_s']:.2f}x |")
    if "fast-dual" in theirs:
        out += ["", f"DyLLM (family default tau) runs {ours['dyllm']['tokens_per_s']:.1f} tok/s, "
                f"{ours['dyllm']['tokens_per_s'] / theirs['fast-dual']['tokens_per_s']:.2f}x the official dual cache."]
    return out


def main():
    args = sys.argv[1:]
    readme = None
    if "--readme" in args:
        i = args.index("--readme")
        readme = args[i + 1]
        del args[i:i + 2]
    work, out_path, notes_path = args
    mach = dict(line.rstrip("\n").split("=", 1) for line in open(os.path.join(work, "machine.txt")))
    data, backends = cells(work)
    quick = mach["mode"] == "quick"
    table = summary_table(data)
    where = (f"{mach['cpu']}, {mach['cores']} cores; commit {mach['commit']}; "
             f"{mach['rounds']} round(s) of `-r {mach['reps']}`")
    doc = ["# Performance", "",
           "Written by `tests/bench/performance_report.sh BUILD` from one run on one machine; do not edit by hand "
           "(the notes at the end come from `tests/bench/performance_notes.md`)."
           + (" **Quick mode: one repetition, figures for checking the script only.**" if quick else ""), "",
           f"- CPU: {mach['cpu']} ({mach['cores']} cores as the OS sees them)",
           f"- ISA: {mach['flags'].strip() or '-'}",
           f"- Backend, as `dyllm bench` names it: {backends.get(1, '-')} at 1 thread; {backends.get(2, '-')} at 2",
           f"- Build: {mach['version']}, commit {mach['commit']}, run on {mach['date']}",
           f"- Runs: {mach['rounds']} round(s), each cell `dyllm bench --methods {','.join(METHODS)} -r {mach['reps']}` "
           "with the cells interleaved within a round; DyLLM at its family's default tau; about "
           f"{mach['minutes']} minutes", "",
           "Models: the built-in tiny-llada and tiny-dream (default prompt, gen 64, n_u = 1, block 32) and hidden-256, "
           "a random 4-layer LLaDA-format checkpoint of width 256 (`dyllm make-model --family llada --dtype f32 "
           "--layers 4 --embd 256 --heads 4 --ffn 688`; a 256-id prompt, gen 64, steps 64, block 32, "
           "`--ignore-eos`).", "",
           "## Summary", "",
           "Tokens/s are medians over rounds; \"x original\" is the method's tokens/s over original's in the same run, "
           "then the median over rounds. \"Dense steps % of GEMM probe\": original's dense-step GFLOP/s as a share of "
           "the engine's own GEMM on the model's dense-step shapes, measured around every repetition. The last column "
           "sets DyLLM's time against Fast-dLLM's dual cache beside the inverse ratio of their FLOPs per token: where "
           "the two agree, time tracks FLOPs.", ""] + table + [
           "", "## Every method, every cell", ""] + detail_tables(data) + [
           "## GEMM probes and thread placement", "",
           "The rates each cell's `%` columns are a share of (medians of original's row), the system BLAS's sgemm on "
           "the same shapes with plain weights, the probe on one thread (a 2-thread run whose probe is below 0.65 x 2 "
           "of it had threads sharing a core), and the cache line's trip between two threads (from 80 ns the cores sit "
           "far apart and the 2-thread figures are those of that placement).", ""] + probe_table(data) + [
           "", "## Quantized weights: logit error against f32", "", quant_logits_caption(work), ""] + quant_logits(work) + [
           "", "## LLaDA-8B shape", ""] + real_size(work) + [
           "", "## Against the official Python code", ""] + official(work) + [""]
    doc += open(notes_path).read().rstrip("\n").split("\n") + [""]
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    open(out_path, "w").write("\n".join(doc))
    print("\n".join(table))
    if readme:
        text = open(readme).read()
        if BEGIN not in text or END not in text:
            sys.exit(f"performance_report.py: {readme} has no {BEGIN} ... {END} markers")
        a, b = text.index(BEGIN) + len(BEGIN), text.index(END)
        logits = quant_logits(work)
        if logits:
            logits = ["", "Logit error of each storage type against f32 (one dense step; "
                      "[method](docs/performance.md#quantized-weights-logit-error-against-f32)):", "", *logits]
        block = ["", *table, *logits, "",
                 f"{where}. Regenerate: `tests/bench/performance_report.sh build`; every cell and the method: "
                 "[docs/performance.md](docs/performance.md)."
                 + (" Quick mode: one repetition, not for keeping." if quick else ""), ""]
        open(readme, "w").write(text[:a] + "\n".join(block) + text[b:])


if __name__ == "__main__":
    main()
