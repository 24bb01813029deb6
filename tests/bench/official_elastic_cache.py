#!/usr/bin/python3
"""Runs the Elastic-Cache authors' LLaDA decoder (yxu-dev/Elastic-Cache: llada/generate.py
generate_with_elastic_cache with llada/model/modeling_llada.py) on torch CPU, on a LLaDA-format checkpoint this engine
also runs, and compares it step by step with a `dyllm generate --json --method elastic-cache --ignore-eos` output: the
tokens, the step that unmasked each position, the rows each step queried and the layer each step's refresh began at.

The authors' code is not part of this repository: point --elastic at the root of a checkout of yxu-dev/Elastic-Cache or
at a bare git directory of it (its HEAD is then extracted into a temporary directory). Their files run unmodified; the
PyPI packages they import that Debian 12 lacks get the minimal stand-ins of tests/bench/official_llada.py (loaded by
path: transformers' PreTrainedModel, PretrainedConfig, CausalLMOutputWithPast, Cache, AutoModel/AutoTokenizer
registries; einops.rearrange, unused on this path). Their modeling file imports `.configuration_llada`, which the
repository does not carry (LLaDA checkpoints ship it); when the checkout has no llada/model/configuration_llada.py a
stand-in is registered: the enums the model compares against (str-valued, as LLaDA's) and a ModelConfig dataclass of
the fields the model reads, with LLaDA's defaults, which the checkpoint's config.json overrides.

Their decoder stops decoding past the first EOS it decodes; --ignore-eos (the default here) passes eos_id=-1, one of
their function's arguments, so that it decodes every position as `dyllm generate --ignore-eos` does. Their confidence
takes the argmax over the whole vocabulary, [MASK] included; this engine never predicts [MASK] (engine/README.md
decision 11): a step where theirs would is reported.

Usage (1 thread; Debian's torch imports only with /usr/bin/python3):
  dyllm generate -m assets/models/tiny-llada --prompt-ids "1,2,3" -n 32 --method elastic-cache --ignore-eos --json \
      [--threshold 0.9] > engine.json
  /usr/bin/python3 tests/bench/official_elastic_cache.py --elastic ELASTIC_GIT_OR_CHECKOUT \
      --model assets/models/tiny-llada --prompt-ids "1,2,3" --gen 32 [--threshold 0.9] --expect engine.json \
      [--window 16 --gamma 0.9 --track 1 --no-block-caching]
Without --threshold both decode one token per step (their tokens_per_iter=1, threshold=None; the engine's default with
steps = gen length); with it, the confidence-threshold mode of both.

Prints one JSON line: the authors' token ids, unmask steps, query rows and refresh layer per step (their start_reset
after the forward: -1 every layer recomputed, n_layers none) and, with --expect, whether the engine's match, the first
step where the decodes part, and the authors' confidences there of the positions each decoder unmasked.
"""
import argparse
import dataclasses
import enum
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path

HERE = Path(__file__).resolve()


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


official_llada = load(HERE.parent / "official_llada.py", "dyllm_official_llada")  # sets the BLAS thread variables
import torch  # noqa: E402


# ---- configuration_llada stand-in ----------------------------------------------------------------------------------
class StrEnum(str, enum.Enum):
    def __str__(self):
        return self.value


class ActivationType(StrEnum):
    gelu = "gelu"
    relu = "relu"
    silu = "silu"
    swiglu = "swiglu"


class BlockType(StrEnum):
    sequential = "sequential"
    parallel = "parallel"
    llama = "llama"


class LayerNormType(StrEnum):
    default = "default"
    low_precision = "low_precision"
    rms = "rms"
    gemma_rms = "gemma_rms"


class InitFnType(StrEnum):
    mitchell = "mitchell"
    normal = "normal"
    kaiming_normal = "kaiming_normal"
    fan_in = "fan_in"
    full_megatron = "full_megatron"


class ActivationCheckpointingStrategy(StrEnum):
    whole_layer = "whole_layer"
    one_in_two = "one_in_two"
    one_in_three = "one_in_three"
    one_in_four = "one_in_four"
    fine_grained = "fine_grained"


@dataclasses.dataclass
class ModelConfig:
    d_model: int = 4096
    n_heads: int = 32
    n_kv_heads: int = None
    n_layers: int = 32
    mlp_ratio: int = 4
    mlp_hidden_size: int = None
    activation_type: str = "silu"
    block_type: str = "llama"
    block_group_size: int = 1
    alibi: bool = False
    alibi_bias_max: float = 8.0
    rope: bool = True
    rope_theta: float = 10000.0
    rope_full_precision: bool = True
    flash_attention: bool = False
    attention_dropout: float = 0.0
    attention_layer_norm: bool = False
    attention_layer_norm_with_affine: bool = True
    residual_dropout: float = 0.0
    embedding_dropout: float = 0.0
    input_emb_norm: bool = False
    layer_norm_type: str = "rms"
    layer_norm_with_affine: bool = True
    bias_for_layer_norm: bool = None
    rms_norm_eps: float = 1e-5
    max_sequence_length: int = 4096
    include_bias: bool = False
    include_qkv_bias: bool = False
    scale_logits: bool = False
    vocab_size: int = 126464
    embedding_size: int = 126464
    weight_tying: bool = False
    init_device: str = None
    init_fn: str = "normal"
    init_std: float = 0.02
    init_cutoff_factor: float = None
    precision: str = None

    @property
    def effective_n_kv_heads(self):
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads


def install_configuration_stand_in():
    base = sys.modules["transformers"].PretrainedConfig

    class LLaDAConfig(base):
        model_type = "llada"

        def __init__(self, **kwargs):
            defaults = {f.name: f.default for f in dataclasses.fields(ModelConfig)}
            defaults["use_cache"] = False
            defaults.update(kwargs)
            super().__init__(**defaults)

    m = types.ModuleType("model.configuration_llada")
    m.__dict__.update({"LLaDAConfig": LLaDAConfig, "StrEnum": StrEnum, "InitFnType": InitFnType,
                       "ActivationType": ActivationType, "BlockType": BlockType, "LayerNormType": LayerNormType,
                       "ModelConfig": ModelConfig, "ActivationCheckpointingStrategy": ActivationCheckpointingStrategy})
    sys.modules["model.configuration_llada"] = m


def checkout(path):
    """A directory holding the authors' files: path itself, or its HEAD extracted when it is a bare git directory."""
    p = Path(path)
    if (p / "llada" / "generate.py").exists():
        return str(p), None
    tmp = tempfile.TemporaryDirectory(prefix="elastic-cache-")
    archive = subprocess.run(["git", f"--git-dir={p}", "archive", "HEAD"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", tmp.name], input=archive, check=True)
    return tmp.name, tmp


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--elastic", required=True, help="a yxu-dev/Elastic-Cache checkout or its bare git directory")
    ap.add_argument("--model", required=True, help="LLaDA-format checkpoint directory (config.json, safetensors)")
    ap.add_argument("--prompt-ids", required=True, help="prompt token ids: a JSON array or comma-separated")
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--window", type=int, default=16, help="their window_length (--elastic-window)")
    ap.add_argument("--gamma", type=float, default=0.9, help="their gamma (--elastic-gamma)")
    ap.add_argument("--track", type=int, default=1, help="their track_num (--elastic-track)")
    ap.add_argument("--no-block-caching", action="store_true", help="their block_caching=False")
    ap.add_argument("--threshold", type=float, help="their confidence threshold (--threshold); default: top-1")
    ap.add_argument("--stop-at-eos", action="store_true", help="their EOS rule (default: eos_id -1, as --ignore-eos)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--expect", help="a `dyllm generate --json --method elastic-cache` output to compare with")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    root, keep = checkout(args.elastic)
    llada = Path(root) / "llada"
    official_llada.install_stand_ins()
    if not (llada / "model" / "configuration_llada.py").exists():
        install_configuration_stand_in()
    sys.path.insert(0, str(llada))
    from model.configuration_llada import LLaDAConfig  # noqa: E402  (the authors' code from here on)
    from model.modeling_llada import LLaDAModelLM  # noqa: E402
    import generate as theirs  # noqa: E402
    train_model = load(HERE.parents[2] / "assets" / "train" / "model.py", "dyllm_train_model")

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
    P, T = len(ids), len(ids) + args.gen

    # Observation only (their code's behaviour unchanged): each forward's query rows and the layer its refresh began
    # at (lengths[1] after the call), and each step's decoded positions and confidences.
    rows, resets, decoded, confidences, mask_predicted = [], [], [], [], []
    forward = model.forward

    def observe_forward(x_query, **kwargs):
        out = forward(x_query, **kwargs)
        rows.append(int(x_query.shape[1]))
        resets.append(int(kwargs["lengths"][1]))
        return out

    model.forward = observe_forward

    def observe(pick):
        def wrapped(logits, query_masked_position, x, *a, **k):
            p = torch.softmax(logits.to(torch.float64), dim=-1)
            conf, tok = p.max(dim=-1)
            confidences.append({int(q) - P: float(c) for q, c in zip(query_masked_position.tolist(), conf[0])})
            if bool((tok == config.mask_token_id).any()):
                mask_predicted.append(len(decoded) + 1)
            x, pos, eos = pick(logits, query_masked_position, x, *a, **k)
            decoded.append([int(q) - P for q in pos.tolist()])
            return x, pos, eos
        return wrapped

    theirs.get_decoded_token_confident = observe(theirs.get_decoded_token_confident)
    theirs.get_decoded_token_topk = observe(theirs.get_decoded_token_topk)
    eos_id = config.eos_token_id if args.stop_at_eos else -1
    x, nfe, share = theirs.generate_with_elastic_cache(
        model, torch.tensor([ids], dtype=torch.long), gen_length=args.gen, window_length=args.window,
        mask_id=config.mask_token_id, eos_id=eos_id, threshold=args.threshold, tokens_per_iter=1, gamma=args.gamma,
        track_num=args.track, block_caching=not args.no_block_caching)

    tokens = x[0, P:].tolist()
    steps = [0] * args.gen
    for step, positions in enumerate(decoded, start=1):
        for p in positions:
            steps[p] = step
    L = config.n_layers
    out = {"method": "elastic-cache", "torch": torch.__version__, "steps": nfe, "token_ids": tokens,
           "unmask_step": steps, "query_rows": rows, "refresh_layer": resets, "recomputed_share": share,
           "mask_predicted_at_steps": mask_predicted}
    if args.expect:
        with open(args.expect) as f:
            run = json.load(f)
        engine = run["sequences"][0]
        out["same_tokens_as_engine"] = engine["token_ids"] == tokens
        out["same_unmask_order_as_engine"] = engine["unmask_step"] == steps
        parted = [s for s in range(1, max(steps + engine["unmask_step"]) + 1)
                  if {p for p, t in enumerate(steps) if t == s} !=
                  {p for p, t in enumerate(engine["unmask_step"]) if t == s}
                  or any(tokens[p] != engine["token_ids"][p] for p, t in enumerate(steps) if t == s)]
        out["first_step_differing"] = parted[0] if parted else None
        # The engine's refresh layer per step: -1 for a step whose every layer computed every row, else the first
        # layer that did (n_layers: none).
        layers = [st["layers"] for st in run["accounting"]["steps"]]
        engine_rows = [ls[0]["query_rows"] for ls in layers]
        engine_resets = []
        for i, ls in enumerate(layers):
            full = [l for l, a in enumerate(ls) if a["query_rows"] == T]
            engine_resets.append(-1 if i == 0 else (full[0] if full else L))
        out["same_query_rows_per_step"] = engine_rows == rows
        out["same_refresh_layer_per_step"] = engine_resets == resets
        out["refresh_layer_same_through_step"] = next(
            (i for i, (a, b) in enumerate(zip(engine_resets, resets)) if a != b), min(len(resets), len(engine_resets)))
        if parted:
            s = parted[0]
            out["at_first_difference"] = {
                "authors_unmasked": {p: confidences[s - 1].get(p) for p, t in enumerate(steps) if t == s},
                "engine_unmasked": {p: confidences[s - 1].get(p) for p, t in enumerate(engine["unmask_step"])
                                    if t == s}}
        out["positions_differing"] = sum(a != b for a, b in zip(engine["token_ids"], tokens))
    print(json.dumps(out), flush=True)
    del keep


if __name__ == "__main__":
    main()
