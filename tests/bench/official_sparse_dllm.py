#!/usr/bin/python3
"""Runs the Sparse-dLLM authors' LLaDA decoder (OpenMOSS/Sparse-dLLM: opencompass/models/sparse_dllm/llada_generate.py
with its modeling_llada.py, the path their myeval/eval_speed/llada_sparse_dllm.py takes) on torch CPU, on a LLaDA-format
checkpoint this engine also runs, and compares it step by step with a `dyllm generate --json --method sparse-dllm
--ignore-eos` output (their decoder does not stop at EOS): the tokens, the step that unmasked each position and the rows
each step computed.

The authors' code is not part of this repository: point --sparse-dllm at the root of a checkout of OpenMOSS/Sparse-dLLM
or at a bare git directory of it (its HEAD is then extracted into a temporary directory). Their files run unmodified;
their package directory is registered by path (opencompass itself is not needed), and the PyPI packages they import
that Debian 12 lacks get tests/bench/official_llada.py's stand-ins (transformers, einops, F.scaled_dot_product_attention
where torch < 2.0 lacks it) plus one here: torch.nn.attention (sdpa_kernel, SDPBackend: imported, used only in a
comment) where torch < 2.2 lacks it. The checkpoint is read by the built-in models' own reader (assets/train/model.py).

Usage (1 thread; Debian's torch imports only with /usr/bin/python3):
  dyllm generate -m assets/models/tiny-llada --prompt-ids "1,2,3" -n 64 --method sparse-dllm --ignore-eos --json \
      > engine.json
  /usr/bin/python3 tests/bench/official_sparse_dllm.py --sparse-dllm SPARSE_DLLM_GIT_OR_CHECKOUT \
      --model assets/models/tiny-llada --prompt-ids "1,2,3" --gen 64 --block 32 --expect engine.json \
      [--keep-ratio 0.5 --kernel-size 3]
Prints one JSON line: the authors' token ids, unmask steps and rows per step and, with --expect, whether they match the
engine's and the first step where the decodes part. The unmask steps and rows are observed by wrapping the model's
forward (called unchanged): each call is one step, and the canvas it saw is compared with the next call's.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def checkout(path):
    """A directory holding the authors' files: path itself, or its HEAD extracted when it is a bare git directory."""
    p = Path(path)
    if (p / "opencompass" / "models" / "sparse_dllm" / "llada_generate.py").exists():
        return str(p), None
    tmp = tempfile.TemporaryDirectory(prefix="sparse-dllm-")
    archive = subprocess.run(["git", f"--git-dir={p}", "archive", "HEAD"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", tmp.name], input=archive, check=True)
    return tmp.name, tmp


def register_package(name, path):
    """An importable package at path whose __init__ (if any) does not run (opencompass's imports its whole harness)."""
    module = types.ModuleType(name)
    module.__path__ = [str(path)]
    sys.modules[name] = module
    return module


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sparse-dllm", required=True, help="an OpenMOSS/Sparse-dLLM checkout or its bare git directory")
    ap.add_argument("--model", required=True, help="LLaDA-format checkpoint directory (config.json, safetensors)")
    ap.add_argument("--prompt-ids", required=True, help="prompt token ids: a JSON array or comma-separated")
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--steps", type=int, default=0, help="denoising steps (default: --gen, one token per step)")
    ap.add_argument("--block", type=int, default=32, help="their block_length (--block-length)")
    ap.add_argument("--keep-ratio", type=float, default=0.5, help="their keep_ratio (--sparse-keep-ratio)")
    ap.add_argument("--kernel-size", type=int, default=3, help="their kernel_size (--sparse-kernel-size)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--expect", help="a `dyllm generate --json --method sparse-dllm --ignore-eos` output")
    args = ap.parse_args()
    steps_total = args.steps or args.gen

    here = Path(__file__).resolve()
    official_llada = load(here.parent / "official_llada.py", "dyllm_official_llada")
    import torch  # noqa: E402  (after official_llada set the BLAS thread variables)

    torch.set_num_threads(args.threads)
    official_llada.install_stand_ins()
    if "torch.nn.attention" not in sys.modules:
        try:
            import torch.nn.attention  # noqa: F401
        except ImportError:
            stand_in = types.ModuleType("torch.nn.attention")
            stand_in.sdpa_kernel = lambda *a, **k: None
            stand_in.SDPBackend = types.SimpleNamespace(EFFICIENT_ATTENTION=None, FLASH_ATTENTION=None, MATH=None)
            sys.modules["torch.nn.attention"] = stand_in
    root, keep = checkout(args.sparse_dllm)
    pkg = Path(root) / "opencompass" / "models" / "sparse_dllm"
    register_package("opencompass", Path(root) / "opencompass")
    register_package("opencompass.models", Path(root) / "opencompass" / "models")
    register_package("opencompass.models.sparse_dllm", pkg)
    from opencompass.models.sparse_dllm.configuration_llada import LLaDAConfig  # noqa: E402  (the authors' code)
    from opencompass.models.sparse_dllm.modeling_llada import LLaDAModelLM  # noqa: E402
    from opencompass.models.sparse_dllm.llada_generate import generate  # noqa: E402
    train_model = load(here.parents[2] / "assets" / "train" / "model.py", "dyllm_train_model")

    with open(os.path.join(args.model, "config.json")) as f:
        config = LLaDAConfig(**json.load(f))
    # As their eval script sets them (llada_sparse_dllm.py main()).
    config.kernel_size = args.kernel_size
    config.keep_ratio = args.keep_ratio
    config.block_len = args.block
    model = LLaDAModelLM(config, init_params=False)
    state = {}
    for name in sorted(os.listdir(args.model)):
        if name.endswith(".safetensors"):
            state.update(train_model.read_safetensors(os.path.join(args.model, name)))
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or [m for m in missing if "rotary" not in m]:
        raise SystemExit(f"{args.model}: checkpoint does not match the authors' model: missing {missing}, "
                         f"unexpected {unexpected}")
    model.eval()

    ids = json.loads(args.prompt_ids) if args.prompt_ids.lstrip().startswith("[") else \
        [int(t) for t in args.prompt_ids.split(",")]
    P, mask = len(ids), config.mask_token_id

    # Observation only: each forward is one step; the canvas is the first call's input (x itself, updated in place).
    # Also each step's confidence of every response position it computed (as their low_confidence remasking scores).
    canvas, seen, rows, confidences = [], [], [], []
    forward = model.forward

    def observe(input_ids, *a, **k):
        if not canvas:
            canvas.append(input_ids)
        seen.append(canvas[0][0, P:].clone())
        rows.append(int(input_ids.shape[1]))
        result = forward(input_ids, *a, **k)
        probs = torch.softmax(result.logits[0], dim=-1)
        conf = probs.gather(-1, probs.argmax(-1, keepdim=True))[:, 0].tolist()
        # A dense step's input is the whole canvas; a cached step's, its block.
        start = 0 if rows[-1] == P + args.gen else P + ((len(rows) - 1) // (steps_total * args.block // args.gen)) * \
            args.block
        confidences.append({pos - P: conf[pos - start] for pos in range(max(P, start), start + rows[-1])})
        return result

    model.forward = observe
    with torch.no_grad():
        x = generate(model, torch.tensor([ids], dtype=torch.long), steps=steps_total, gen_length=args.gen,
                     block_length=args.block, temperature=0.0, cfg_scale=0.0, remasking="low_confidence", mask_id=mask)
    seen.append(x[0, P:].clone())
    tokens = x[0, P:].tolist()
    unmask = [0] * args.gen
    for step in range(1, len(seen)):
        for p in range(args.gen):
            if int(seen[step - 1][p]) == mask and int(seen[step][p]) != mask:
                unmask[p] = step
    out = {"method": "sparse-dllm", "torch": torch.__version__, "keep_ratio": args.keep_ratio,
           "kernel_size": args.kernel_size, "steps": len(rows), "token_ids": tokens, "unmask_step": unmask,
           "query_rows": rows}
    if args.expect:
        with open(args.expect) as f:
            doc = json.load(f)
        engine = doc["sequences"][0]
        out["same_tokens_as_engine"] = engine["token_ids"] == tokens
        out["same_unmask_order_as_engine"] = engine["unmask_step"] == unmask
        parted = [s for s in range(1, max(unmask + engine["unmask_step"]) + 1)
                  if {p for p, t in enumerate(unmask) if t == s} !=
                  {p for p, t in enumerate(engine["unmask_step"]) if t == s}
                  or any(tokens[p] != engine["token_ids"][p] for p, t in enumerate(unmask) if t == s)]
        out["first_step_differing"] = parted[0] if parted else None
        if parted:
            # Their confidences, at that step, of the positions each decoder unmasked there: a gap at fp32 rounding
            # (one ulp near 1) is a tie either summation order may break.
            st = parted[0]
            out["at_first_difference"] = {
                "authors_unmasked": {p: confidences[st - 1].get(p) for p, t in enumerate(unmask) if t == st},
                "engine_unmasked": {p: confidences[st - 1].get(p) for p, t in enumerate(engine["unmask_step"])
                                    if t == st}}
        engine_rows = [st["layers"][0]["query_rows"] for st in doc["accounting"]["steps"]]
        out["same_query_rows_per_step"] = engine_rows == rows
        out["positions_differing"] = sum(a != b for a, b in zip(engine["token_ids"], tokens))
    print(json.dumps(out), flush=True)
    del keep


if __name__ == "__main__":
    main()
