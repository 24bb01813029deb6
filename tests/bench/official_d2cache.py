#!/usr/bin/python3
"""Runs the d2Cache authors' decoder (Kamichanw/d2Cache: src/cache/d2cache.py with src/generation/vanilla.py and
src/models/llada/modeling_llada.py or src/models/dream/modeling_dream.py) on torch CPU, on a LLaDA- or Dream-format
checkpoint this engine also runs, and compares it step by step with a `dyllm generate --json --method d2cache
--ignore-eos` output (their decoder does not stop at EOS): the tokens and the step that unmasked each position.

Dream: their scripts rank candidates by confidence (maskgit_plus), this engine's Dream sampler by negative entropy
(their alg="entropy", --alg entropy; with it `--no-cache` reproduces `--method original`). d2Cache's certainty prior is
the confidence in both, so with the default --alg a Dream d2cache decode matches until the two rankings part, and with
--alg entropy their prior is the negative entropy instead.

The authors' code is not part of this repository: point --d2cache at the root of a checkout of Kamichanw/d2Cache or at
a bare git directory of it (its HEAD is then extracted into a temporary directory). Their files run unmodified; the
PyPI packages they import that Debian 12 lacks get minimal stand-ins here, each only as much as this path touches
(none copied from those projects):

  pydantic       BaseModel (annotated fields with defaults, Field(default / default_factory), nested models from
                 dicts, model_dump / model_validate, model_validator(mode="after")), Field, model_validator
  transformers   PreTrainedModel (an nn.Module holding its config, post_init() a no-op), PretrainedConfig (keyword
                 arguments as attributes), ModelOutput (keyword fields; integer indexing over those not None; also
                 BaseModelOutput and MaskedLMOutput), AutoConfig / AutoModel (register() only),
                 utils.logging.get_logger (the standard logging module's); for Dream also ACT2FN (silu), Cache and
                 DynamicCache (empty classes), ROPE_INIT_FUNCTIONS["default"] (inv_freq = theta^(-2i / head_dim),
                 scaling 1), rope_config_validation (no-op), GenerationConfig (an empty class: only subclassed),
                 is_torchdynamo_compiling (False), __version__
  src, src.utils, src.generation, src.models, src.models.llada
                 the authors' packages are registered by path so that their __init__ files, which import hydra,
                 omegaconf, loguru, accelerate, every decoding strategy and their evaluation harness, do not run: src.utils gets the names of
                 src/utils/common.py (run unmodified) and is_adapted_from_ar, which reads the config's model_type as
                 theirs in src/utils/models.py does; src.models gets LLaDAModelLM and DreamModel
  src.generation.utils.get_token_freq
                 returns None: every step builds the PC sampler's token frequency table, whose ids are the real LLaDA
                 vocabulary's (past a built-in model's); only debias=True, never set here, reads it
  torch          torch.backends.cuda.enable_*_sdp as no-ops where torch < 2.0 lacks them
  safetensors    the checkpoint is read by the built-in models' own reader (assets/train/model.py)

The model runs with config._attn_implementation = "eager" (d2Cache needs the attention weights; their loader sets it
through from_pretrained). Their vanilla_generate runs with sigma None (no certainty-prior-guided sampling: the
engine's sampler is confidence order) and the cache's own defaults unless given.

Usage (1 thread; Debian's torch imports only with /usr/bin/python3):
  dyllm generate -m assets/models/tiny-llada --prompt-ids "1,2,3" -n 64 --method d2cache --ignore-eos --json \
      > engine.json
  /usr/bin/python3 tests/bench/official_d2cache.py --d2cache D2CACHE_GIT_OR_CHECKOUT --model assets/models/tiny-llada \
      --prompt-ids "1,2,3" --gen 64 --block 32 --expect engine.json [--k 32 --sigma 10 --rollout-p 0.1 --inflate 0]
With --no-cache their decoder runs without a cache, to be set against `--method original`: where the two decodes part
there too, the parting is the sampler's, not d2Cache's.

Prints one JSON line: the authors' token ids, unmask steps and query rows per step and, with --expect, whether they
match the engine's, the first step where the decodes part, and the authors' confidences there of the positions each
decoder unmasked (a gap at fp32 rounding is a tie the two summation orders may break either way). The query row counts
and the confidences are observed by wrapping d2Cache.on_step_end and vanilla.generate_step (both run unchanged).
"""
import argparse
import importlib.util
import json
import logging
import os
import subprocess
import sys
import tempfile
import types
import typing
from pathlib import Path


def _threads_from_argv():
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, _threads_from_argv())

import torch  # noqa: E402


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def module(name, attrs=None, path=None):
    m = types.ModuleType(name)
    m.__dict__.update(attrs or {})
    if path is not None:
        m.__path__ = [str(path)]
    sys.modules[name] = m
    if "." in name:
        parent, child = name.rsplit(".", 1)
        if parent in sys.modules:
            setattr(sys.modules[parent], child, m)
    return m


# ---- pydantic stand-in ---------------------------------------------------------------------------------------------
_MISSING = object()


class FieldInfo:
    def __init__(self, default=_MISSING, default_factory=None, description=None, **_):
        self.default, self.default_factory = default, default_factory


def Field(default=_MISSING, *, default_factory=None, description=None, **kwargs):
    return FieldInfo(default, default_factory, description, **kwargs)


def model_validator(mode="after"):
    if mode != "after":
        raise NotImplementedError("pydantic stand-in: only mode='after' validators")

    def mark(fn):
        fn.__model_validator__ = True
        return fn

    return mark


def _model_types(annotation):
    """The BaseModel subclasses an annotation names (directly or inside a union)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [t for a in typing.get_args(annotation) for t in _model_types(a)]


class BaseModel:
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fields = {}
        for klass in reversed(cls.__mro__):
            for name, ann in klass.__dict__.get("__annotations__", {}).items():
                if not name.startswith("_"):
                    fields[name] = (ann, klass.__dict__.get(name, _MISSING))
        cls.__fields = fields
        cls.__validators = [v for k in reversed(cls.__mro__) for v in k.__dict__.values()
                            if getattr(v, "__model_validator__", False)]

    def __init__(self, **data):
        for name, (ann, spec) in type(self).__fields.items():
            if name in data:
                value = data[name]
            elif isinstance(spec, FieldInfo):
                if spec.default_factory is not None:
                    value = spec.default_factory()
                elif spec.default is not _MISSING:
                    value = spec.default
                else:
                    raise TypeError(f"pydantic stand-in: {type(self).__name__}.{name} is required")
            elif spec is not _MISSING:
                value = spec
            else:
                raise TypeError(f"pydantic stand-in: {type(self).__name__}.{name} is required")
            if isinstance(value, dict):
                for t in _model_types(ann):
                    value = t(**value)
                    break
            object.__setattr__(self, name, value)
        for v in type(self).__validators:
            v(self)

    def model_dump(self):
        def dump(v):
            if isinstance(v, BaseModel):
                return v.model_dump()
            if isinstance(v, (list, tuple)):
                return type(v)(dump(x) for x in v)
            if isinstance(v, dict):
                return {k: dump(x) for k, x in v.items()}
            return v

        return {name: dump(getattr(self, name)) for name in type(self).__fields}

    @classmethod
    def model_validate(cls, obj):
        return obj if isinstance(obj, cls) else cls(**obj)


# ---- transformers stand-in -----------------------------------------------------------------------------------------
class PretrainedConfig:
    model_type = ""

    def __init__(self, **kwargs):
        kwargs.setdefault("return_dict", True)
        kwargs.setdefault("output_attentions", False)
        kwargs.setdefault("output_hidden_states", False)
        for key, value in kwargs.items():
            setattr(self, key, value)

    @property
    def use_return_dict(self):
        return self.return_dict


class PreTrainedModel(torch.nn.Module):
    def __init__(self, config, *args, **kwargs):
        super().__init__()
        self.config = config

    def post_init(self):
        pass

    @property
    def device(self):
        return next(self.parameters()).device

    @property
    def dtype(self):
        return next(self.parameters()).dtype


class ModelOutput:
    """Keyword fields as attributes; integer indexing over the fields that are not None, in order (as theirs)."""

    def __init__(self, **kwargs):
        self._order = list(kwargs)
        for key, value in kwargs.items():
            setattr(self, key, value)

    def __getitem__(self, i):
        return [getattr(self, k) for k in self._order if getattr(self, k) is not None][i]


def default_rope(config, device=None, **kwargs):
    """transformers' "default" RoPE init: inv_freq = theta^(-2i / head_dim), no attention scaling."""
    dim = config.hidden_size // config.num_attention_heads
    inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float().to(device) / dim))
    return inv_freq, 1.0


class AutoRegistry:
    @staticmethod
    def register(*args, **kwargs):
        pass


def install_stand_ins(root):
    module("pydantic", {"BaseModel": BaseModel, "Field": Field, "model_validator": model_validator})
    module("transformers", {"PreTrainedModel": PreTrainedModel, "PretrainedConfig": PretrainedConfig,
                            "AutoConfig": AutoRegistry, "AutoModel": AutoRegistry})
    module("transformers.modeling_utils", {"PreTrainedModel": PreTrainedModel})
    module("transformers.configuration_utils", {"PretrainedConfig": PretrainedConfig})
    module("transformers.utils", {"logging": types.SimpleNamespace(get_logger=logging.getLogger)})
    module("transformers.utils.generic", {"ModelOutput": ModelOutput})
    module("transformers.models")
    module("transformers.models.auto", {"AutoModel": AutoRegistry})
    # Dream's modeling and generation files (their Dream path only).
    sys.modules["transformers"].__version__ = "4.46.0"
    module("transformers.activations", {"ACT2FN": {"silu": torch.nn.SiLU()}})
    module("transformers.cache_utils", {"Cache": type("Cache", (), {}), "DynamicCache": type("DynamicCache", (), {})})
    module("transformers.modeling_outputs", {"BaseModelOutput": ModelOutput, "MaskedLMOutput": ModelOutput})
    module("transformers.modeling_rope_utils", {"ROPE_INIT_FUNCTIONS": {"default": default_rope},
                                                "rope_config_validation": lambda config: None})
    module("transformers.generation")
    module("transformers.generation.configuration_utils", {"GenerationConfig": type("GenerationConfig", (), {})})
    module("transformers.utils.import_utils", {"is_torchdynamo_compiling": lambda: False})

    for name in ("enable_flash_sdp", "enable_mem_efficient_sdp", "enable_math_sdp"):  # torch < 2.0 lacks them
        if not hasattr(torch.backends.cuda, name):
            setattr(torch.backends.cuda, name, lambda enabled: None)

    src = Path(root) / "src"
    module("src", path=src)
    utils = module("src.utils", path=src / "utils")
    common = load(src / "utils" / "common.py", "src.utils.common")
    utils.__dict__.update({k: v for k, v in common.__dict__.items() if not k.startswith("__")})

    def is_adapted_from_ar(model_or_config):
        config = getattr(model_or_config, "config", model_or_config)
        kind = config.model_type.lower()
        if kind not in ("llada", "dream"):
            raise ValueError(f"Unsupported model type: {config.model_type}")
        return kind == "dream"

    utils.is_adapted_from_ar = is_adapted_from_ar
    module("src.generation", path=src / "generation")
    models = module("src.models", path=src / "models")
    module("src.models.llada", path=src / "models" / "llada")

    module("src.models.dream", path=src / "models" / "dream")


def checkout(path):
    """A directory holding the authors' files: path itself, or its HEAD extracted when it is a bare git directory."""
    p = Path(path)
    if (p / "src" / "cache" / "d2cache.py").exists():
        return str(p), None
    tmp = tempfile.TemporaryDirectory(prefix="d2cache-")
    archive = subprocess.run(["git", f"--git-dir={p}", "archive", "HEAD"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", tmp.name], input=archive, check=True)
    return tmp.name, tmp


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--d2cache", required=True, help="a Kamichanw/d2Cache checkout or its bare git directory")
    ap.add_argument("--model", required=True, help="LLaDA-format checkpoint directory (config.json, safetensors)")
    ap.add_argument("--prompt-ids", required=True, help="prompt token ids: a JSON array or comma-separated")
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--block", type=int, default=32)
    ap.add_argument("--k", type=int, default=32, help="the authors' current_k (--d2-k)")
    ap.add_argument("--sigma", type=float, default=10.0, help="the authors' cache sigma (--d2-sigma)")
    ap.add_argument("--rollout-p", type=float, default=0.1, help="the authors' rollout_p (--d2-rollout-p)")
    ap.add_argument("--inflate", type=int, default=0, help="the authors' inflate_w (--d2-inflate; their scripts: 0)")
    ap.add_argument("--no-cache", action="store_true",
                    help="their vanilla_generate without a cache (to set against `dyllm generate --method original`)")
    ap.add_argument("--alg", default="maskgit_plus", choices=["maskgit_plus", "entropy"],
                    help="their sampler's score (their scripts: maskgit_plus, the confidence; entropy is this engine's "
                         "Dream sampler's)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--expect", help="a `dyllm generate --json --method d2cache` output to compare with")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    root, keep = checkout(args.d2cache)
    install_stand_ins(root)
    from src.models.llada.configuration_llada import LLaDAConfig  # noqa: E402  (the authors' code from here on)
    from src.models.llada.modeling_llada import LLaDAModelLM  # noqa: E402
    from src.models.dream.configuration_dream import DreamConfig  # noqa: E402
    from src.models.dream.modeling_dream import DreamModel  # noqa: E402
    sys.modules["src.models"].LLaDAModelLM = LLaDAModelLM
    sys.modules["src.models"].DreamModel = DreamModel
    from src.cache import d2Cache  # noqa: E402
    from src.generation.vanilla import vanilla_generate  # noqa: E402
    # The PC-sampler's token frequency table (debias=True only) is indexed by the real LLaDA vocabulary, past a built-in
    # model's: every step builds it, so it is left out here.
    sys.modules["src.generation.utils"].get_token_freq = lambda *args: None
    train_model = load(Path(__file__).resolve().parents[2] / "assets" / "train" / "model.py", "dyllm_train_model")

    with open(os.path.join(args.model, "config.json")) as f:
        raw = json.load(f)
    dream = raw.get("model_type", "").lower() == "dream"
    config = (DreamConfig if dream else LLaDAConfig)(**raw)
    config._attn_implementation = "eager"
    model = (DreamModel if dream else LLaDAModelLM)(config)
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
    os.environ["MASK_TOKEN_ID"] = str(config.mask_token_id)

    def cache_cls(model_config):
        return d2Cache(model_config, rollout_p=args.rollout_p, current_k=args.k, sigma=args.sigma,
                       inflate_w=args.inflate)

    # Observation only (their code's behaviour unchanged): the rows each step queried, and each step's confidences.
    queried, confidences = [], []
    on_step_end = d2Cache.on_step_end

    def observe(self, block_mask, frame, delta):
        on_step_end(self, block_mask, frame, delta)
        queried.append(int(self._full_q_mask[0].sum()))

    vanilla = sys.modules["src.generation.vanilla"]
    generate_step = vanilla.generate_step

    def observe_step(*args, **kwargs):
        delta = generate_step(*args, **kwargs)
        if delta is not None:
            confidences.append(delta.confidence[0].tolist())
        return delta

    d2Cache.on_step_end = observe
    vanilla.generate_step = observe_step
    record = vanilla_generate(model, torch.tensor([ids], dtype=torch.long), block_length=args.block,
                              gen_length=args.gen, num_transfer_tokens=1, temperature=0.0, alg=args.alg,
                              mask_token_id=config.mask_token_id, cache_cls=None if args.no_cache else cache_cls)
    # Each delta is one step (1-based in the engine's unmask_step); its transfer_index the positions it unmasked.
    tokens = [config.mask_token_id] * args.gen
    steps = [0] * args.gen
    for step, delta in enumerate(record.deltas, start=1):
        positions = delta.transfer_index[0].tolist()
        for p in positions:
            tokens[p] = int(delta.decoded_tokens[0, p])
            steps[p] = step
    rows = [len(ids) + args.gen] + queried[:-1]  # step 1 is dense; step s + 1 queries what step s chose
    if args.no_cache:
        rows = [len(ids) + args.gen] * len(record.deltas)
    out = {"method": "original" if args.no_cache else "d2cache", "torch": torch.__version__, "steps": len(record.deltas), "token_ids": tokens,
           "unmask_step": steps, "query_rows": rows}
    if args.expect:
        with open(args.expect) as f:
            engine = json.load(f)["sequences"][0]
        out["same_tokens_as_engine"] = engine["token_ids"] == tokens
        out["same_unmask_order_as_engine"] = engine["unmask_step"] == steps
        parted = [s for s in range(1, max(steps + engine["unmask_step"]) + 1)
                  if {p for p, t in enumerate(steps) if t == s} !=
                  {p for p, t in enumerate(engine["unmask_step"]) if t == s}
                  or any(tokens[p] != engine["token_ids"][p] for p, t in enumerate(steps) if t == s)]
        out["first_step_differing"] = parted[0] if parted else None
        engine_rows = [st["layers"][0]["query_rows"] for st in json.load(open(args.expect))["accounting"]["steps"]]
        out["same_query_rows_per_step"] = engine_rows == rows
        out["query_rows_same_through_step"] = next((i for i, (a, b) in enumerate(zip(engine_rows, rows)) if a != b),
                                                   min(len(rows), len(engine_rows)))
        if parted:
            # Their confidences, at that step, of the positions each decoder unmasked there: a gap at fp32 rounding
            # (one ulp near 1) is a tie either summation order may break.
            s = parted[0]
            theirs_pos = [p for p, t in enumerate(steps) if t == s]
            engine_pos = [p for p, t in enumerate(engine["unmask_step"]) if t == s]
            out["at_first_difference"] = {
                "authors_unmasked": {p: confidences[s - 1][p] for p in theirs_pos},
                "engine_unmasked": {p: confidences[s - 1][p] for p in engine_pos}}
        out["positions_differing"] = sum(a != b for a, b in zip(engine["token_ids"], tokens))
    print(json.dumps(out), flush=True)
    del keep


if __name__ == "__main__":
    main()
