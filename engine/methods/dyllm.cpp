// DyLLM: T_full exact steps fill the caches; later steps recompute only the salient rows (attention context cosine
// to the previous step below tau), reuse the cached FFN output of the others and update their attention context
// through the salient columns (engine/README.md §a).
#include "engine/methods/dyllm.h"

#include <algorithm>

#include "engine/methods/drift.h"
#include "engine/methods/method.h"

namespace dyllm {

namespace {

// The host-side index lists of one sparse layer, kept between calls (per thread, as the attention kernels keep their
// plans) and reserved for every row of the batch from a run's first step (DyllmMethod::run_layers), so a steady run
// refills them without allocating.
struct SparseLayerScratch {
    std::vector<int32_t> idx_s, idx_e, idx_l;  // S_{l-1}, the exact rows and S_l as indices into the query rows
    std::vector<int32_t> fallback;             // rows the incremental update could not serve
    RowSet               exact_rows;           // the rows attention serves exactly

    void reserve(size_t n) {
        for (std::vector<int32_t>* v : {&idx_s, &idx_e, &idx_l, &fallback}) v->reserve(n);
        exact_rows.reserve(n);
    }
};
thread_local SparseLayerScratch t_scratch;

}  // namespace

StepKind dyllm_step_kind(int step, int full_steps, int fullq_every) {
    if (step <= std::max(1, full_steps)) return StepKind::Full;
    if (step > fullq_every && step % fullq_every != 0) return StepKind::SparseResponse;
    return StepKind::SparseFullQuery;
}

void dyllm_sparse_layer(Forward& fwd, int l, Tensor& h, const BatchLayout& lay, const RowSet& q, const RowSet& s_prev,
                        LayerCache& c, float tau, StableUpdate update, SaliencyOutcome& out, bool drift) {
    const ModelConfig&  cfg = fwd.config();
    const LayerWeights& L   = fwd.weights().layers[size_t(l)];
    const int64_t       n   = int64_t(q.size());
    const int64_t       ns  = int64_t(s_prev.size());
    LayerAccount&       A   = fwd.account(l);
    A.query_rows += int32_t(n);
    A.kv_rows += int32_t(ns);
    SparseLayerScratch&   scratch    = t_scratch;
    std::vector<int32_t>& idx_s      = scratch.idx_s;
    std::vector<int32_t>& idx_e      = scratch.idx_e;
    std::vector<int32_t>& idx_l      = scratch.idx_l;
    RowSet&               exact_rows = scratch.exact_rows;
    out.tested                       = q;  // copy-assignments and clear() keep the capacity of a reused outcome
    out.salient.clear();
    out.cosines.clear();
    out.drift.clear();
    if (n == 0) return;

    // A layer whose K/V-recompute set S_{l-1} is empty changes no key and no value: every query row's update over
    // the salient columns is empty, so C_new = C_old bit for bit, and Q, scored only to weigh those columns, would
    // not be used. Such a layer skips steps 1-6 and the context write-back; the cosine test, o_proj and the FFN
    // cache run as always, so the decode is the same. The incremental update's fallback (exact attention, which
    // needs Q) takes only rows whose swapped terms left too little mass or whose cached log-sum-exp is not finite;
    // with no key swapped it is the cached value, which every exact attention of the row wrote (all rows in the
    // first step) and no update leaves NaN at the end of a layer. Not for the exact ablation (it recomputes every
    // context) or a drift measurement (exact attention again). Tiny-llada's default bench prompt: 74 of 232 sparse
    // layer-steps.
    const bool unchanged = ns == 0 && !drift && update != StableUpdate::Exact;

    // The old contexts (C_old of step 6): read in place from the context cache when the query rows are one run of cache
    // rows and the cache is fp32 (one sequence: every row, or its response rows), else gathered (c.ctx is only written
    // at step 8).
    Tensor     c_old_copy;
    TensorView c_old = rows_in_place(c.ctx, q);
    if (c_old.empty()) {
        c_old_copy = fwd.alloc(n, cfg.q_dim());
        fwd.gather(l, c.ctx, q.rows, c_old_copy);
        c_old = c_old_copy;
    }
    Tensor     c_new_buf;
    TensorView c_new = c_old;  // an unchanged layer's new contexts are its old ones
    if (unchanged) {
        A.attn_approx_rows += int32_t(n);
    } else {
        c_new_buf = fwd.alloc(n, cfg.q_dim());
        c_new     = c_new_buf;
        // 1-2: norm and Q for every query row; K/V only for S_{l-1}.
        Tensor x = fwd.alloc(n, cfg.n_embd);
        fwd.norm(l, h, L.attn_norm, x);
        Tensor Q;
        fwd.qkv(l, x, q, &Q, nullptr, nullptr);
        index_within(q, s_prev, idx_s);
        Tensor xs = fwd.alloc(ns, cfg.n_embd);
        fwd.gather(l, x, idx_s, xs);
        Tensor Ks, Vs;
        fwd.qkv(l, xs, s_prev, nullptr, &Ks, &Vs);

        // 3-4: patch the K cache (the incremental update keeps the old keys); dV = v_new - v_cached on the salient rows
        // (rounded to the cache dtype).
        const bool inc   = update == StableUpdate::Incremental;
        Tensor     k_old = inc ? fwd.alloc_cache(ns, cfg.kv_dim()) : Tensor{};
        if (inc) fwd.gather(l, c.k, s_prev.rows, k_old);
        fwd.scatter(l, Ks, s_prev.rows, c.k);
        Tensor v_old = inc ? fwd.alloc_cache(ns, cfg.kv_dim()) : fwd.alloc(ns, cfg.kv_dim());
        fwd.gather(l, c.v, s_prev.rows, v_old);
        Tensor dv = fwd.alloc_cache(ns, cfg.kv_dim());
        if (ns > 0) fwd.backend().sub(Vs, v_old, dv);
        fwd.scatter(l, Vs, s_prev.rows, c.v);

        // 5-6: exact rows for S_{l-1}, column-sparse approximation for the rest.
        exact_rows = s_prev;
        if (update != StableUpdate::Exact) {
            // Exact rows: S_{l-1}, plus the rows the incremental update could not serve (their unchanged keys held
            // almost none of their softmax mass).
            idx_e               = idx_s;
            const auto exact_of = [&q, &exact_rows](const std::vector<int32_t>& idx) {  // the rows of q at idx
                exact_rows.clear();
                for (int32_t i : idx) exact_rows.push(q.rows[size_t(i)], q.seq[size_t(i)], q.pos[size_t(i)]);
            };
            if (update == StableUpdate::FullSoftmax) {
                // The exact rows' scores are part of the approximation's pass: one pass serves both (same numbers).
                exact_of(idx_e);
                fwd.attention_approx_exact(l, Q, q, c, dv, s_prev, lay, c_old, c_new, idx_e, exact_rows);
            } else {
                std::vector<int32_t>& fb = scratch.fallback;
                if (inc)
                    fwd.attention_cols(l, Q, q, c, dv, s_prev, lay, c_old, c_new, fb, k_old, v_old);
                else
                    fwd.attention_cols(l, Q, q, c, dv, s_prev, lay, c_old, c_new, fb);
                if (!fb.empty()) {
                    idx_e.insert(idx_e.end(), fb.begin(), fb.end());
                    std::sort(idx_e.begin(), idx_e.end());
                    idx_e.erase(std::unique(idx_e.begin(), idx_e.end()), idx_e.end());
                }
                exact_of(idx_e);
                const int64_t ne = int64_t(idx_e.size());
                Tensor        qe = fwd.alloc(ne, cfg.q_dim()), o_e = fwd.alloc(ne, cfg.q_dim());
                fwd.gather(l, Q, idx_e, qe);
                fwd.attention(l, qe, exact_rows, c, lay, o_e, &c);  // also refreshes their log-sum-exp in c.lse
                fwd.scatter(l, o_e, idx_e, c_new);
            }
            const int64_t ne = int64_t(idx_e.size());
            A.attn_exact_rows += int32_t(ne);
            A.attn_approx_rows += int32_t(n - ne);
        } else {
            fwd.attention(l, Q, q, c, lay, c_new, &c);
            A.attn_exact_rows += int32_t(n);
        }
        if (drift && update != StableUpdate::Exact)  // only measured, never used
            measure_drift(fwd, Q, q, exact_rows, c, lay, c_new, out.drift);
    }

    // 7-8: one cosine per token over all heads; S_l = {cos < tau}; the cache keeps the (approximate) context.
    fwd.cosine(l, c_new, c_old, out.cosines);
    for (size_t i = 0; i < q.size(); ++i)
        if (out.cosines[i] < tau) out.salient.push(q.rows[i], q.seq[i], q.pos[i]);
    if (!unchanged) fwd.scatter(l, c_new, q.rows, c.ctx);

    // 9-10: dense o_proj; FFN only for S_l, cached FFN output for every other row.
    Tensor a = fwd.alloc(n, cfg.n_embd);
    fwd.matmul(l, OpClass::OProj, c_new, L.wo, TensorView{}, a);
    fwd.residual_add(l, h, a);
    // The FFN's RMSNorm only for S_l (row by row, so the same values as normalising every row and gathering).
    index_within(q, out.salient, idx_l);
    const int64_t nl  = int64_t(idx_l.size());
    Tensor        hs  = fwd.alloc(nl, cfg.n_embd);
    Tensor        x2s = fwd.alloc(nl, cfg.n_embd), m = fwd.alloc(nl, cfg.n_embd);
    if (nl > 0) {
        fwd.gather(l, h, idx_l, hs);
        fwd.norm(l, hs, L.ffn_norm, x2s);
        fwd.ffn(l, x2s, m);
    }
    fwd.scatter(l, m, out.salient.rows, c.ffn);
    A.ffn_rows += int32_t(nl);
    fwd.residual_add_rows(l, c.ffn, q.rows, h);  // h += the FFN cache's rows (this step's for S_l), no gathered copy
}

namespace {

class DyllmMethod final : public DecodingMethod {
public:
    using DecodingMethod::DecodingMethod;

    CacheNeeds caches() const override {
        return {.ctx = true, .ffn = true, .lse = p_.approx && (p_.approx_columns || p_.approx_incremental)};
    }

    StepKind step_kind(const StepInput& in) const override {
        return dyllm_step_kind(in.step, p_.full_steps, p_.fullq_every);
    }

    // Response-only steps add the last prompt row for Dream, so the first response position reads its shifted logits
    // (engine/README.md, decision 3); without it (dream_prompt_row off) that position reads its own row, as in the
    // authors' code.
    void query_rows(const StepInput& in, StepKind kind, RowSet& out) const override {
        if (kind == StepKind::SparseResponse)
            return response_rows(*in.lay, cfg_.family == Family::Dream && p_.dream_prompt_row, out);
        all_rows(*in.lay, out);
    }

    Tensor run_layers(Forward& fwd, const StepInput& in, StepKind kind, const RowSet& q,
                      std::vector<LayerCache>& caches, const SaliencyReport& report) override {
        const BatchLayout& lay = *in.lay;
        // The outcome and S_{l-1} are kept between steps and reserved for every row of the batch from the first (FULL)
        // step on, so the sparse steps' layer loop refills them without allocating (S_l is at most the query rows).
        o_.tested.reserve(size_t(lay.n_rows()));
        o_.salient.reserve(size_t(lay.n_rows()));
        o_.cosines.reserve(size_t(lay.n_rows()));
        s_.reserve(size_t(lay.n_rows()));
        t_scratch.reserve(size_t(lay.n_rows()));
        if (kind == StepKind::Full) {
            // FULL steps fill the caches; their cosines come for free from the context cache when a sink listens.
            const bool measure = (p_.measure_cosine || in.observed) && in.step > 1;
            return run_dense(fwd, in, q, caches, true, measure, report);
        }
        Tensor h = fwd.embed(lay, q);
        salient_seed(in, s_);
        // The drift guard: a refresh step serves every row exactly, so drifted contexts are replaced (and re-tested).
        const bool         refresh = p_.exact_refresh > 0 && in.step % p_.exact_refresh == 0;
        const StableUpdate update  = !p_.approx || refresh   ? StableUpdate::Exact
                                     : p_.approx_incremental ? StableUpdate::Incremental
                                     : p_.approx_columns     ? StableUpdate::Columns
                                                             : StableUpdate::FullSoftmax;
        for (int l = 0; l < cfg_.n_layer; ++l) {
            dyllm_sparse_layer(fwd, l, h, lay, q, s_, caches[size_t(l)], in.tau, update, o_,
                               p_.measure_drift && in.observed);
            report(l, o_);
            std::swap(s_, o_.salient);  // S_l seeds the next layer; the old S_{l-1}'s buffers take the next S_l
        }
        return h;
    }

private:
    // S_0: the rows the previous step unmasked (their token changed from [MASK]).
    static void salient_seed(const StepInput& in, RowSet& s) {
        s.clear();
        for (int b = 0; b < in.lay->n_seq(); ++b) {
            const SeqProgress& st = in.seqs[size_t(b)];
            for (int32_t pos : st.last_unmasked)
                s.push(in.lay->cu[size_t(b)] + st.prompt_len + pos, b, st.prompt_len + pos);
        }
    }

    SaliencyOutcome o_;  // the current layer's outcome
    RowSet          s_;  // S_{l-1}
};

}  // namespace

std::unique_ptr<DecodingMethod> make_dyllm_method(const ModelConfig& cfg, const DiffusionParams& p) {
    return std::make_unique<DyllmMethod>(cfg, p);
}

}  // namespace dyllm
