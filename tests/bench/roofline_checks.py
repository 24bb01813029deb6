#!/usr/bin/env python3
"""Summarises roofline_checks.sh's bench files: medians over rounds per cell (shape x threads).

Each round's ratios are taken within that round's one bench run (the methods of a cell run interleaved in one
process), then the median over rounds: a ratio never mixes runs.
"""
import glob
import json
import os
import statistics
import sys

CACHED = ["dyllm", "fast-dual", "fast-prefix", "dllm-cache"]


def cell_rows(path):
    rows = json.load(open(path))
    rows = rows["results"] if isinstance(rows, dict) else rows
    return {r["method"]: r for r in rows}


def main(out):
    cells = {}
    for path in sorted(glob.glob(os.path.join(out, "*_t*_r*.json"))):
        shape, threads, _ = os.path.basename(path)[:-5].split("_")
        cells.setdefault((shape, threads), []).append(cell_rows(path))
    med = statistics.median
    print("| shape, threads | rounds | original tok/s | GFLOP/s (sgemm) | dense % | "
          + " | ".join(f"{m} x" for m in CACHED) + " | dyllm / fast-dual tok/s (FLOP ratio) |")
    print("|---|--:|--:|--:|--:|" + "--:|" * len(CACHED) + "--:|")
    for (shape, threads), runs in sorted(cells.items()):
        o = [r["original"] for r in runs]
        xs = {m: med([r[m]["gflops"] / r["original"]["gflops"] for r in runs]) for m in CACHED}
        tps = med([r["dyllm"]["tokens_per_s"] / r["fast-dual"]["tokens_per_s"] for r in runs])
        flop = med([r["fast-dual"]["flops_per_token"] / r["dyllm"]["flops_per_token"] for r in runs])
        print(f"| {shape} -t {threads[1:]} | {len(runs)} | {med([x['tokens_per_s'] for x in o]):.1f} | "
              f"{med([x['gflops'] for x in o]):.1f} ({med([x['sgemm_gflops'] for x in o]):.1f}) | "
              f"{med([x['pct_sgemm_dense'] for x in o]):.1f} | "
              + " | ".join(f"{xs[m]:.2f}" for m in CACHED)
              + f" | {tps:.2f} ({flop:.2f}) |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/roofline")
