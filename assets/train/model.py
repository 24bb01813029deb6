# The built-in models in torch: bidirectional pre-norm transformer (RMSNorm, rotate-half RoPE, SwiGLU, untied head),
# LLaDA flavour (MHA, no biases) and Dream flavour (GQA, q/k/v biases, one-position logit shift); safetensors export.
import json
import math
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(n_pos, head_dim, theta):
    inv = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)  # [hd/2]
    ang = torch.arange(n_pos, dtype=torch.float32)[:, None] * inv[None, :]  # [L, hd/2]
    ang = torch.cat([ang, ang], dim=-1)  # rotate-half layout [L, hd]
    return ang.cos(), ang.sin()


def apply_rope(x, cos, sin):
    # x [B, H, L, hd]; rotate-half: [x1|x2] -> [x1 cos - x2 sin | x2 cos + x1 sin]
    h = x.shape[-1] // 2
    rot = torch.cat([-x[..., h:], x[..., :h]], dim=-1)
    return x * cos + rot * sin


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, nh, nkv, hd = cfg["d"], cfg["n_heads"], cfg["n_kv_heads"], cfg["head_dim"]
        self.nh, self.nkv, self.hd = nh, nkv, hd
        bias = cfg["qkv_bias"]
        self.attn_norm = RMSNorm(d, cfg["eps"])
        self.q = nn.Linear(d, nh * hd, bias=bias)
        self.k = nn.Linear(d, nkv * hd, bias=bias)
        self.v = nn.Linear(d, nkv * hd, bias=bias)
        self.o = nn.Linear(nh * hd, d, bias=False)
        self.ff_norm = RMSNorm(d, cfg["eps"])
        self.gate = nn.Linear(d, cfg["ffn"], bias=False)
        self.up = nn.Linear(d, cfg["ffn"], bias=False)
        self.down = nn.Linear(cfg["ffn"], d, bias=False)

    def forward(self, x, cos, sin, key_bias, ctx_out=None):
        B, L, _ = x.shape
        h = self.attn_norm(x)
        q = self.q(h).view(B, L, self.nh, self.hd).transpose(1, 2)
        k = self.k(h).view(B, L, self.nkv, self.hd).transpose(1, 2)
        v = self.v(h).view(B, L, self.nkv, self.hd).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        # GQA: query head j reads kv head j // r (HF repeat_kv), so the r query heads of a kv head are stacked as r * L
        # rows against its L keys instead of copying K and V r times. The scale and the padding bias (key_bias
        # [B,1,1,L], -inf on padding) go into the score product (baddbmm): on these CPU shapes the [B, H, L, L] passes,
        # not the products, bound the step (memory-bound elementwise ops), and this saves two of them forward and one
        # backward (about 8% of a step; the same function, scores differ in the last bit: x * (1 / sqrt(hd)) vs x / sqrt(hd)).
        G, r = B * self.nkv, self.nh // self.nkv
        bias = key_bias.expand(B, self.nkv, 1, L).reshape(G, 1, L)
        att = torch.baddbmm(bias, q.reshape(G, r * L, self.hd), k.reshape(G, L, self.hd).transpose(1, 2),
                            alpha=1.0 / math.sqrt(self.hd))
        ctx = torch.bmm(att.softmax(-1), v.reshape(G, L, self.hd)).view(B, self.nh, L, self.hd)
        ctx = ctx.transpose(1, 2).reshape(B, L, self.nh * self.hd)
        if ctx_out is not None:
            ctx_out.append(ctx.detach())
        x = x + self.o(ctx)
        h = self.ff_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class TinyMDLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg["vocab"], cfg["d"])
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg["n_layers"])])
        self.ln_f = RMSNorm(cfg["d"], cfg["eps"])
        self.head = nn.Linear(cfg["d"], cfg["vocab"], bias=False)
        self.apply(self._init)
        for b in self.blocks:  # residual-output projections scaled down (GPT-2 / experiment init)
            nn.init.normal_(b.o.weight, std=0.02 / math.sqrt(2 * cfg["n_layers"]))
            nn.init.normal_(b.down.weight, std=0.02 / math.sqrt(2 * cfg["n_layers"]))
        self._rope = None

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)

    def rope(self, L):
        if self._rope is None or self._rope[0].shape[0] < L:
            self._rope = rope_tables(max(L, 512), self.cfg["head_dim"], self.cfg["rope_theta"])
        return self._rope[0][:L], self._rope[1][:L]

    def hidden(self, ids, key_valid, ctx_out=None):
        """ids [B, L] int64; key_valid [B, L] bool (False = left padding). Returns final-normed hidden [B, L, d]."""
        B, L = ids.shape
        cos, sin = (v.to(ids.device) for v in self.rope(L))
        key_bias = torch.zeros(B, 1, 1, L, device=ids.device)
        key_bias.masked_fill_(~key_valid[:, None, None, :], float("-inf"))
        x = self.wte(ids)
        for blk in self.blocks:
            x = blk(x, cos, sin, key_bias, ctx_out)
        return self.ln_f(x)

    def n_params(self):
        return sum(p.numel() for p in self.parameters())


def write_safetensors(path, tensors):
    """tensors: list of (name, float32 tensor). Format: u64 LE header length, JSON header, raw little-endian data."""
    header, blobs, off = {}, [], 0
    for name, t in tensors:
        data = t.detach().cpu().contiguous().to(torch.float32).numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)  # align data start to 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """name -> fp32 torch tensor, for the F32 / F16 / BF16 tensors of one .safetensors file (also read by
    tests/bench/official_llada.py)."""
    import numpy as np
    dtypes = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        if v["dtype"] not in dtypes:
            raise ValueError(f"{path}: tensor {k}: dtype {v['dtype']} not handled here")
        a, b = v["data_offsets"]
        t = torch.from_numpy(np.frombuffer(data[a:b], dtype=dtypes[v["dtype"]]).copy())
        if v["dtype"] == "BF16":  # bf16 bits are the high half of an fp32
            t = (t.to(torch.int32) << 16).view(torch.float32)
        out[k] = t.float().view(v["shape"])
    return out


def export_names(model, family):
    """(hf_name, tensor) pairs in the family's real checkpoint layout; Linear weights are already [out, in]."""
    out = []
    if family == "llada":
        out.append(("model.transformer.wte.weight", model.wte.weight))
        for i, b in enumerate(model.blocks):
            p = f"model.transformer.blocks.{i}."
            out += [(p + "attn_norm.weight", b.attn_norm.weight), (p + "q_proj.weight", b.q.weight),
                    (p + "k_proj.weight", b.k.weight), (p + "v_proj.weight", b.v.weight),
                    (p + "attn_out.weight", b.o.weight), (p + "ff_norm.weight", b.ff_norm.weight),
                    (p + "ff_proj.weight", b.gate.weight), (p + "up_proj.weight", b.up.weight),
                    (p + "ff_out.weight", b.down.weight)]
        out += [("model.transformer.ln_f.weight", model.ln_f.weight), ("model.transformer.ff_out.weight", model.head.weight)]
    else:
        out.append(("model.embed_tokens.weight", model.wte.weight))
        for i, b in enumerate(model.blocks):
            p = f"model.layers.{i}."
            out += [(p + "self_attn.q_proj.weight", b.q.weight), (p + "self_attn.q_proj.bias", b.q.bias),
                    (p + "self_attn.k_proj.weight", b.k.weight), (p + "self_attn.k_proj.bias", b.k.bias),
                    (p + "self_attn.v_proj.weight", b.v.weight), (p + "self_attn.v_proj.bias", b.v.bias),
                    (p + "self_attn.o_proj.weight", b.o.weight),
                    (p + "mlp.gate_proj.weight", b.gate.weight), (p + "mlp.up_proj.weight", b.up.weight),
                    (p + "mlp.down_proj.weight", b.down.weight),
                    (p + "input_layernorm.weight", b.attn_norm.weight),
                    (p + "post_attention_layernorm.weight", b.ff_norm.weight)]
        out += [("model.norm.weight", model.ln_f.weight), ("lm_head.weight", model.head.weight)]
    return out


def load_exported(model, family, path):
    """Loads model.safetensors back into the torch model (round-trip check and evaluation of exports)."""
    t = read_safetensors(path)
    with torch.no_grad():
        for name, p in export_names(model, family):
            p.copy_(t[name])
