# A plain torch re-implementation of DyLLM decoding (engine/README.md §a.3-§a.9 and its
# decisions 2-5), written independently of the C++ engine to cross-check it on the built-in models: one sequence,
# fp32, every step's per-layer cosines and salient sets recorded. `compare_dyllm.py` runs both and diffs them.
import math

import torch
import torch.nn.functional as F

from evaluate import block_candidates, eos_finished, pick
from model import apply_rope, rope_tables


def _rms(x, norm):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + norm.eps) * norm.weight


def _rope(x, pos, n_heads, hd, theta):
    """x [n, n_heads*hd] rotated at absolute positions pos [n]."""
    cos, sin = rope_tables(int(pos.max()) + 1, hd, theta)
    y = x.view(-1, n_heads, hd)
    return apply_rope(y.transpose(0, 1), cos[pos], sin[pos]).transpose(0, 1).reshape(x.shape)


def _probs(q, k, nh, nkv, hd):
    """softmax(q k^T / sqrt(hd)) per head: q [n, nh*hd], k [L, nkv*hd] -> [nh, n, L] (GQA: head h reads h // (nh/nkv))."""
    qh = q.view(-1, nh, hd).transpose(0, 1)
    kh = k.view(-1, nkv, hd).transpose(0, 1).repeat_interleave(nh // nkv, dim=0)
    return (qh @ kh.transpose(1, 2) / math.sqrt(hd)).softmax(-1)


def _apply(p, v, nh, nkv, hd):
    """p [nh, n, m] times v [m, nkv*hd] -> [n, nh*hd]."""
    vh = v.view(-1, nkv, hd).transpose(0, 1).repeat_interleave(nh // nkv, dim=0)
    return (p @ vh).transpose(0, 1).reshape(p.shape[1], nh * hd)


class Reference:
    def __init__(self, model, fam, mask_id, eos_ids, measure_drift=False):
        self.m, self.fam, self.mask_id, self.eos_ids = model, fam, mask_id, set(eos_ids)
        # measure_drift: also record, for every row the cosine test calls stable, the cosine between its approximate
        # context and exact attention over the same (partly stale) K/V caches, i.e. what the "Salient" ablation uses.
        self.measure_drift = measure_drift
        c = model.cfg
        self.nh, self.nkv, self.hd, self.theta = c["n_heads"], c["n_kv_heads"], c["head_dim"], c["rope_theta"]

    def _ffn(self, blk, x):
        return blk.down(F.silu(blk.gate(x)) * blk.up(x))

    def _layer_dense(self, li, blk, h, rows, tokens_pos, cache):
        x = _rms(h, blk.attn_norm)
        q = _rope(blk.q(x), tokens_pos[rows], self.nh, self.hd, self.theta)
        cache["k"][li][rows] = _rope(blk.k(x), tokens_pos[rows], self.nkv, self.hd, self.theta)
        cache["v"][li][rows] = blk.v(x)
        ctx = _apply(_probs(q, cache["k"][li], self.nh, self.nkv, self.hd), cache["v"][li], self.nh, self.nkv, self.hd)
        cache["c"][li][rows] = ctx
        h = h + blk.o(ctx)
        m = self._ffn(blk, _rms(h, blk.ff_norm))
        cache["m"][li][rows] = m
        return h + m

    def _layer_sparse(self, li, blk, h, rows, s_prev, pos, cache, tau, rec, forced=None):
        """rows: query positions (sorted); s_prev: salient positions (a subset of rows). Returns h, S_l. With forced
        (another implementation's S_l), that set is used and the reference's own is only recorded."""
        K, V, C, M = cache["k"][li], cache["v"][li], cache["c"][li], cache["m"][li]
        x = _rms(h, blk.attn_norm)
        q = _rope(blk.q(x), pos[rows], self.nh, self.hd, self.theta)
        idx = torch.tensor([rows.index(p) for p in s_prev], dtype=torch.long)
        if len(s_prev):
            xs = x[idx]
            K[s_prev] = _rope(blk.k(xs), pos[s_prev], self.nkv, self.hd, self.theta)
            vs = blk.v(xs)
            dv = vs - V[s_prev]
            V[s_prev] = vs
        c_old = C[rows].clone()
        p = _probs(q, K, self.nh, self.nkv, self.hd)  # scores against every key, K already patched
        c_new = c_old.clone()
        if len(s_prev):
            c_new = c_new + _apply(p[:, :, s_prev], dv, self.nh, self.nkv, self.hd)  # column-sparse update
            c_new[idx] = _apply(p[:, idx, :], V, self.nh, self.nkv, self.hd)  # exact rows for S_{l-1}
        cos = (c_new * c_old).sum(-1) * torch.rsqrt((c_new * c_new).sum(-1).clamp_min(1e-8)) * \
            torch.rsqrt((c_old * c_old).sum(-1).clamp_min(1e-8))
        sal = [r for r, cv in zip(rows, cos.tolist()) if cv < tau]
        rec.append({"rows": list(rows), "cosines": cos.tolist(), "salient": sal})
        if self.measure_drift:
            exact = _apply(p, V, self.nh, self.nkv, self.hd)
            stable = [i for i, r in enumerate(rows) if r not in set(sal) | set(s_prev)]
            rec[-1]["drift_cos"] = F.cosine_similarity(exact[stable], c_new[stable], dim=-1).tolist()
        if forced is not None:
            sal = forced
        C[rows] = c_new
        h = h + blk.o(c_new)
        if sal:
            j = torch.tensor([rows.index(r) for r in sal], dtype=torch.long)
            M[sal] = self._ffn(blk, _rms(h, blk.ff_norm)[j])
        return h + M[rows], sal

    @torch.no_grad()
    def generate(self, prompt, gen_length=64, steps=64, block=32, tau=0.99, full_steps=4, fullq_every=4, follow=None):
        """Greedy DyLLM decoding of one prompt. follow: the engine's per-step JSONL records; when given, the reference
        takes the engine's unmasking choices and salient sets (recording its own scores and sets beside them), so
        that near-ties (fp32 summation order) cannot make the two trajectories drift apart."""
        m, P = self.m, len(prompt)
        L = P + gen_length
        n_u = gen_length // steps
        tok = torch.tensor(list(prompt) + [self.mask_id] * gen_length, dtype=torch.long)
        pos = torch.arange(L)
        d, kvd, qd = m.cfg["d"], self.nkv * self.hd, self.nh * self.hd
        nl = len(m.blocks)
        cache = {"k": [torch.zeros(L, kvd) for _ in range(nl)], "v": [torch.zeros(L, kvd) for _ in range(nl)],
                 "c": [torch.zeros(L, qd) for _ in range(nl)], "m": [torch.zeros(L, d) for _ in range(nl)]}
        last_unmasked, trace = [], []
        for s in range(1, steps + 1):
            if s <= max(1, full_steps):
                kind, rows = "full", list(range(L))
            elif s > fullq_every and s % fullq_every != 0:
                kind = "sparse-response"
                rows = list(range(P - 1 if self.fam.shift else P, L))  # engine/README.md decision 3: Dream adds row P-1
            else:
                kind, rows = "sparse-fullq", list(range(L))
            h = m.wte(tok[rows])
            layers = []
            if kind == "full":
                for li, blk in enumerate(m.blocks):
                    h = self._layer_dense(li, blk, h, rows, pos, cache)
            else:
                sal = sorted(last_unmasked)  # engine/README.md decision 2: the initial salient set sorted by position
                for li, blk in enumerate(m.blocks):
                    forced = None
                    if follow is not None:
                        forced = list(follow[s - 1]["layers"][li]["salient_positions"])  # absolute positions
                    h, sal = self._layer_sparse(li, blk, h, rows, sal, pos, cache, tau, layers, forced)
            hn = m.ln_f(h)
            # candidates: masked positions of the current semi-AR block
            cand = [P + i for i in block_candidates(tok[P:], self.mask_id, gen_length, block)]
            src = [c - 1 if self.fam.shift else c for c in cand]
            logits = m.head(hn[torch.tensor([rows.index(r) for r in src])])
            logits[:, self.mask_id] = -float("inf")
            pr = logits.softmax(-1)
            top_p, top_t = pr.max(-1)
            score = top_p if self.fam.name == "llada" else (pr * torch.log(pr + 1e-10)).sum(-1)
            order = pick(score, cand, n_u)
            rec = {"step": s, "kind": kind, "layers": layers, "unmask": [[cand[j], int(top_t[j])] for j in order]}
            if follow is not None:  # the engine's choice, and how far below the reference's best score it is
                forced = [P + p for u in follow[s - 1]["unmask"] for p in u["positions"]]  # response-relative there
                want = [t for u in follow[s - 1]["unmask"] for t in u["tokens"]]
                rec["token_mismatches"] = sum(int(top_t[cand.index(p)]) != t for p, t in zip(forced, want))
                best = score[order[0]].item()
                rec["score_gap"] = max(best - score[cand.index(p)].item() for p in forced)
                order = [cand.index(p) for p in forced]
            last_unmasked = [cand[j] for j in order]
            for j in order:
                tok[cand[j]] = top_t[j]
            trace.append(rec)
            if eos_finished(tok[P:], [p - P for p in last_unmasked], self.eos_ids, self.mask_id):
                break
        return tok[P:].tolist(), trace
