#!/usr/bin/python3
"""Times the official LLaDA / Fast-dLLM Python decoders on torch CPU, on a LLaDA-format checkpoint this engine also
runs, so `dyllm bench` figures can be set against the reference implementation (performance_report.sh --fast-dllm).

The official code is not part of this repository: point --fast-dllm at the `llada/` directory of a checkout of
NVlabs/Fast-dLLM (its `generate.py` and `model/modeling_llada.py` run unmodified). Debian 12 has none of the PyPI
packages that code imports and an older torch, so this script first installs minimal stand-ins of its own, each
only as much as the official code touches on this path (none of them is copied from those projects):

  transformers   PreTrainedModel (an nn.Module holding its config), PretrainedConfig (keyword arguments as
                 attributes), AutoConfig / AutoModel (register() only), CausalLMOutputWithPast, Cache
  einops         rearrange() raising if called (only the unused fused-QKV block type calls it)
  torch          F.scaled_dot_product_attention where torch < 2.0 lacks it: softmax(q k^T / sqrt(d)) v, the math
                 path torch itself takes on CPU for these shapes; torch.compile (torch < 2.0) as an eager no-op
                 decorator; torch.backends.cuda.enable_*_sdp as no-ops
  safetensors    the checkpoint is read by the built-in models' own reader (assets/train/model.py)

Usage (1 thread, as the issue's comparison; Debian's torch imports only with /usr/bin/python3):
  /usr/bin/python3 tests/bench/official_llada.py --fast-dllm ~/Fast-dLLM/llada --model CKPT \
      --prompt-ids "$(dyllm tokenize -m CKPT -p 'text')" --gen 64 --steps 64 --block 32 --methods original,fast-dual
Prints tokens/s (median of --reps after one warm-up) and the generated ids per method as JSON lines; with
--expect METHOD=FILE (a `dyllm generate --json` output) it also says whether the official decode chose the same tokens.
"""
import argparse
import dataclasses
import importlib.util
import json
import math
import os
import sys
import time
import types
from pathlib import Path


def _threads_from_argv():
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


# torch's BLAS (OpenBLAS on Debian) starts its own thread pool at import, sized by these, not by set_num_threads.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, _threads_from_argv())

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def install_stand_ins():
    """Registers the stand-in modules described above in sys.modules (before the official code imports them)."""

    class PretrainedConfig:
        def __init__(self, **kwargs):
            kwargs.setdefault("return_dict", True)
            for key, value in kwargs.items():
                setattr(self, key, value)

        @property
        def use_return_dict(self):
            return self.return_dict

    class PreTrainedModel(torch.nn.Module):
        def __init__(self, config, *args, **kwargs):
            super().__init__()
            self.config = config

        @property
        def device(self):
            return next(self.parameters()).device

    class Registry:
        @staticmethod
        def register(*args, **kwargs):
            pass

    @dataclasses.dataclass
    class CausalLMOutputWithPast:
        loss: object = None
        logits: object = None
        past_key_values: object = None
        hidden_states: object = None
        attentions: object = None

    class Cache:
        pass

    def rearrange(*args, **kwargs):
        raise NotImplementedError("einops stand-in: rearrange is not used by the llama block type")

    modules = {
        "transformers": {"PreTrainedModel": PreTrainedModel, "PretrainedConfig": PretrainedConfig,
                         "AutoConfig": Registry, "AutoModel": Registry, "AutoTokenizer": Registry},
        "transformers.modeling_outputs": {"CausalLMOutputWithPast": CausalLMOutputWithPast},
        "transformers.models": {},
        "transformers.models.auto": {"AutoModel": Registry},
        "transformers.cache_utils": {"Cache": Cache},
        "einops": {"rearrange": rearrange},
    }
    for name, attrs in modules.items():
        if name in sys.modules:
            continue
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        sys.modules[name] = module

    if not hasattr(F, "scaled_dot_product_attention"):
        def scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False):
            if attn_mask is not None or is_causal or dropout_p != 0.0:
                raise NotImplementedError("stand-in SDPA: only the unmasked, non-causal, no-dropout case")
            scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.size(-1)))
            return torch.matmul(torch.softmax(scores, dim=-1), v)

        F.scaled_dot_product_attention = scaled_dot_product_attention
    if not hasattr(torch, "compile"):  # the official code wraps its SDPA call in @torch.compile(); run it eagerly
        torch.compile = lambda *args, **kwargs: (lambda fn: fn)
    for name in ("enable_flash_sdp", "enable_mem_efficient_sdp", "enable_math_sdp"):
        if not hasattr(torch.backends.cuda, name):
            setattr(torch.backends.cuda, name, lambda enabled: None)


def load_model(fast_dllm, model_dir):
    sys.path.insert(0, fast_dllm)
    from model.configuration_llada import LLaDAConfig  # noqa: E402  (the official code, after the stand-ins)
    from model.modeling_llada import LLaDAModelLM  # noqa: E402
    import generate as official  # noqa: E402

    # This repository's reader, loaded by path: the official code's package is also called `model`.
    spec = importlib.util.spec_from_file_location(
        "dyllm_train_model", Path(__file__).resolve().parents[2] / "assets" / "train" / "model.py")
    train_model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train_model)

    with open(os.path.join(model_dir, "config.json")) as f:
        config = LLaDAConfig(**json.load(f))
    model = LLaDAModelLM(config, init_params=False)
    state = {}
    for name in sorted(os.listdir(model_dir)):
        if name.endswith(".safetensors"):
            state.update(train_model.read_safetensors(os.path.join(model_dir, name)))
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or [m for m in missing if "rotary" not in m]:
        raise ValueError(f"{model_dir}: checkpoint does not match the official model: missing {missing}, "
                         f"unexpected {unexpected}")
    return model.eval(), official, config


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fast-dllm", required=True, help="the llada/ directory of an NVlabs/Fast-dLLM checkout")
    ap.add_argument("--model", required=True, help="LLaDA-format checkpoint directory (config.json, safetensors)")
    ap.add_argument("--prompt-ids", required=True, help="prompt token ids: a JSON array or comma-separated")
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--block", type=int, default=32)
    ap.add_argument("--methods", default="original,fast-prefix,fast-dual")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--expect", action="append", default=[],
                    help="METHOD=FILE: a `dyllm generate --json` output whose token ids the method should match")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    install_stand_ins()
    model, official, config = load_model(args.fast_dllm, args.model)
    ids = json.loads(args.prompt_ids) if args.prompt_ids.lstrip().startswith("[") else \
        [int(t) for t in args.prompt_ids.split(",")]
    prompt = torch.tensor([ids], dtype=torch.long)
    decoders = {"original": official.generate, "fast-prefix": official.generate_with_prefix_cache,
                "fast-dual": official.generate_with_dual_cache}
    expect = dict(e.split("=", 1) for e in args.expect)

    for method in args.methods.split(","):
        if method not in decoders:
            raise SystemExit(f"unknown method '{method}' (official decoders: {', '.join(decoders)})")
        run = lambda: decoders[method](model, prompt, steps=args.steps, gen_length=args.gen,  # noqa: E731
                                       block_length=args.block, temperature=0.0, remasking="low_confidence",
                                       mask_id=config.mask_token_id)
        run()  # warm-up
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            x, nfe = run()
            times.append(time.perf_counter() - t0)
        seconds = sorted(times)[len(times) // 2]
        out = x[0, len(ids):].tolist()
        record = {"method": method, "torch": torch.__version__, "threads": torch.get_num_threads(),
                  "tokens_per_s": args.gen / seconds, "seconds": seconds, "nfe": nfe, "token_ids": out}
        if method in expect:
            with open(expect[method]) as f:
                theirs = json.load(f)["sequences"][0]["token_ids"]
            record["same_tokens_as_engine"] = theirs == out
            record["positions_differing"] = sum(a != b for a, b in zip(theirs, out)) + abs(len(theirs) - len(out))
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
