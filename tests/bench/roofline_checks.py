#!/usr/bin/env python3
"""Summarises roofline_checks.sh's bench files: medians over rounds per cell (shape x threads).

Each round's ratios are taken within that round's one bench run (the methods of a cell run interleaved in one
process), then the median over rounds: a ratio never mixes runs. A multi-thread round counts only when the threads
really ran in parallel: every repetition's sgemm probe on the run's threads at least 0.65 x threads times its
one-thread rate (the bench's own threads_share_cores rule, app/model/sgemm_probe.h). On a shared 2-core VM the
probe's 2-thread speed-up can read anything from 0.6x to 1.9x within an hour (vCPUs on one core's two hyperthreads, a
busy host, or vCPUs far apart). A round whose threads did not run in parallel still
counts in "rounds" ("2 of 3"). The last column is the bench's cross-core hand-off time around the repetitions of
the rounds kept (app/model/core_latency.h): its median, and in how many rounds some repetition found the cores far
apart (>= 80 ns one way), where the threads' figures are those of that placement. A multi-thread cell whose rounds
saw both placements gets a row of its own for the rounds whose every repetition found the cores near, and one for
those that found them far at every repetition (rounds that saw both are in the cell's row only): on a shared VM the
placement flips every 15-60 s, and costs the cached methods' small steps more than original's dense ones.

  roofline_checks.py [OUT=/tmp/roofline]     the table
  roofline_checks.py --parallel FILE         exit 0 when FILE's run is such a round (or a one-thread run), else 1
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


def ran_in_parallel(rows):
    """Whether every sgemm probe of a bench run scaled with its threads (always true for one thread)."""
    for r in rows.values():
        one = r.get("sgemm_1thread_gflops")
        threads = r.get("threads") or (2 if one else 1)  # files from before the bench wrote its threads: 2
        if not one or threads < 2:  # a one-thread run: its probe already ran on one thread
            continue
        for sample in r.get("samples", []):
            if sample["sgemm_gflops"] < 0.65 * threads * one:
                return False
    return True


FAR_CORES_NS = 80.0  # app/model/core_latency.h kFarCoresNs


def cross_core(rows):
    """A run's cross-core hand-off times (ns, one way), one per repetition of every method ([] when not measured)."""
    return [x["cross_core_ns"] for r in rows.values() for x in r.get("samples", [])
            if x.get("cross_core_ns") is not None]


def cores_text(runs):
    """Median hand-off over a cell's rounds and how many rounds saw the cores far apart at some repetition."""
    per_run = [cross_core(r) for r in runs]
    seen = [v for v in per_run if v]
    if not seen:
        return "-"
    far = sum(1 for v in seen if max(v) >= FAR_CORES_NS)
    return f"{statistics.median(statistics.median(v) for v in seen):.0f} ({far} far)"


def placement(rows):
    """"near" or "far" when every repetition of a run found the cores so, "mixed" when it saw both, None unmeasured."""
    v = cross_core(rows)
    if not v:
        return None
    if max(v) < FAR_CORES_NS:
        return "near"
    return "far" if min(v) >= FAR_CORES_NS else "mixed"


def blas_text(o):
    """Original's dense-step share of the system BLAS's sgemm rate (bench's pct_blas_sgemm_dense) and that rate:
    the usual reference for a dense step; "-" in older files."""
    shares = [x["pct_blas_sgemm_dense"] for x in o if x.get("pct_blas_sgemm_dense") is not None]
    if not shares:
        return "-"
    rates = [x["blas_sgemm_gflops"] for x in o if x.get("blas_sgemm_gflops") is not None]
    return f"{statistics.median(shares):.1f} ({statistics.median(rates):.1f})"


def row(label, runs, total):
    """One table row: medians over `runs` (of `total` rounds in the cell)."""
    med = statistics.median
    o = [r["original"] for r in runs]
    xs = {m: med([r[m]["gflops"] / r["original"]["gflops"] for r in runs]) for m in CACHED}
    tps = med([r["dyllm"]["tokens_per_s"] / r["fast-dual"]["tokens_per_s"] for r in runs])
    flop = med([r["fast-dual"]["flops_per_token"] / r["dyllm"]["flops_per_token"] for r in runs])
    print(f"| {label} | {len(runs)} of {total} | {med([x['tokens_per_s'] for x in o]):.1f} | "
          f"{med([x['gflops'] for x in o]):.1f} ({med([x['sgemm_gflops'] for x in o]):.1f}) | "
          f"{med([x['pct_sgemm_dense'] for x in o]):.1f} | {blas_text(o)} | "
          + " | ".join(f"{xs[m]:.2f}" for m in CACHED)
          + f" | {tps:.2f} ({flop:.2f}) | {cores_text(runs)} |")


def main(out):
    cells = {}
    for path in sorted(glob.glob(os.path.join(out, "*_t*_r*.json"))):
        shape, threads, _ = os.path.basename(path)[:-5].split("_")
        rows = cell_rows(path)
        cells.setdefault((shape, threads), [[], 0])
        cells[(shape, threads)][1] += 1
        if ran_in_parallel(rows):
            cells[(shape, threads)][0].append(rows)
    print("| shape, threads | rounds | original tok/s | GFLOP/s (sgemm) | dense % | dense % of BLAS sgemm | "
          + " | ".join(f"{m} x" for m in CACHED) + " | dyllm / fast-dual tok/s (FLOP ratio) | cross-core ns (rounds far) |")
    print("|---|--:|--:|--:|--:|--:|" + "--:|" * len(CACHED) + "--:|--:|")
    for (shape, threads), (runs, total) in sorted(cells.items()):
        if not runs:
            print(f"| {shape} -t {threads[1:]} | 0 of {total} | no round ran its threads in parallel |")
            continue
        row(f"{shape} -t {threads[1:]}", runs, total)
        by_place = {p: [r for r in runs if placement(r) == p] for p in ("near", "far")}
        if by_place["near"] and by_place["far"]:
            for p, rs in by_place.items():
                row(f"{shape} -t {threads[1:]}, cores {p}", rs, total)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--parallel":
        sys.exit(0 if ran_in_parallel(cell_rows(sys.argv[2])) else 1)
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/roofline")
