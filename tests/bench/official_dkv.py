#!/usr/bin/python3
"""Runs the dKV-Cache authors' LLaDA decoders (horseee/dKV-Cache) on torch CPU, on a LLaDA-format checkpoint this
engine also runs, and says whether they chose the same tokens as `dyllm generate --json` outputs of dkv-decode or
dkv-greedy.

The authors' code is not part of this repository: point --dkv at the root of a checkout of horseee/dKV-Cache (its
`models/modeling_llada_dkv_cache_decode.py` and `generation_utils/llada_dkv_cache_decode.py` run unmodified). The
stand-ins for the PyPI packages that code imports are tests/bench/official_llada.py's (loaded by path). The Greedy
variant draws its unmasking order from torch.rand; to replay the engine's order (the seed's, engine/sampler.h
random_order_next), that one call returns scores that sort into the order the --expect output's unmask_step shows.

Usage (1 thread; Debian's torch imports only with /usr/bin/python3):
  /usr/bin/python3 tests/bench/official_dkv.py --dkv ~/dKV-Cache --model CKPT --prompt-ids "1,2,3" \
      --gen 32 --steps 32 --block 8 --refresh 4 [--variant greedy --window 2] [--expect FILE]
Prints the generated ids as a JSON line; with --expect FILE (a `dyllm generate --json -m CKPT --method dkv-decode
--dkv-refresh N` output on the same prompt ids) also whether they are the same and how many positions differ.
"""
import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dkv", required=True, help="the root of a horseee/dKV-Cache checkout")
    ap.add_argument("--model", required=True, help="LLaDA-format checkpoint directory (config.json, safetensors)")
    ap.add_argument("--prompt-ids", required=True, help="prompt token ids: a JSON array or comma-separated")
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--block", type=int, default=8)
    ap.add_argument("--refresh", type=int, default=4, help="the authors' cache_reloading_step (--dkv-refresh)")
    ap.add_argument("--variant", choices=["decode", "greedy"], default="decode")
    ap.add_argument("--window", type=int, default=0, help="greedy: the authors' window_size (--dkv-window)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--expect", help="a `dyllm generate --json` output whose token ids the decode should match")
    args = ap.parse_args()

    here = Path(__file__).resolve()
    official_llada = load(here.parent / "official_llada.py", "dyllm_official_llada")
    import torch  # noqa: E402  (after official_llada set the BLAS thread variables)

    torch.set_num_threads(args.threads)
    official_llada.install_stand_ins()
    sys.path.insert(0, args.dkv)
    from models.configuration_llada import LLaDAConfig  # noqa: E402  (the authors' code, after the stand-ins)
    if args.variant == "decode":
        from models.modeling_llada_dkv_cache_decode import LLaDAModelLM  # noqa: E402
    else:
        from models.modeling_llada_dkv_cache_greedy import LLaDAModelLM  # noqa: E402
        if not args.expect:
            raise SystemExit("--variant greedy replays the engine's order: give --expect")
    decode = load(os.path.join(args.dkv, "generation_utils", f"llada_dkv_cache_{args.variant}.py"),
                  f"dkv_{args.variant}")
    train_model = load(here.parents[2] / "assets" / "train" / "model.py", "dyllm_train_model")

    with open(os.path.join(args.model, "config.json")) as f:
        config = LLaDAConfig(**json.load(f))
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
    prompt = torch.tensor([ids], dtype=torch.long)
    engine = None
    if args.expect:
        with open(args.expect) as f:
            engine = json.load(f)["sequences"][0]
    if args.variant == "decode":
        x = decode.generate(model, None, prompt, steps=args.steps, gen_length=args.gen, block_length=args.block,
                            temperature=0.0, remasking="low_confidence", mask_id=config.mask_token_id,
                            enable_cache=True, cache_reloading_step=args.refresh)
    else:
        # Earlier-unmasked positions score higher, so the authors' descending sort gives the engine's order.
        scores = torch.zeros((1, len(ids) + args.gen))
        for pos, step in enumerate(engine["unmask_step"]):
            scores[0, len(ids) + pos] = 1.0 - step / (args.gen + 1.0)
        rand = torch.rand
        torch.rand = lambda *a, **k: scores.clone()
        try:
            x = decode.generate(model, None, prompt, steps=args.steps, gen_length=args.gen, block_length=args.block,
                                temperature=0.0, remasking="random", mask_id=config.mask_token_id,
                                enable_cache=True, cache_reloading_step=args.refresh, window_size=args.window)
        finally:
            torch.rand = rand
    out = x[0, len(ids):].tolist()
    record = {"method": f"dkv-{args.variant}", "refresh": args.refresh, "torch": torch.__version__, "token_ids": out}
    if engine is not None:
        theirs = engine["token_ids"]
        record["same_tokens_as_engine"] = theirs == out
        record["positions_differing"] = sum(a != b for a, b in zip(theirs, out)) + abs(len(theirs) - len(out))
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
