// Forward-pass building blocks (see forward.h): dense layer over any query rows, DyLLM's sparse layer, the
// dLLM-Cache layer and the LM head, each op timed and counted.
#include "engine/forward.h"

#include <algorithm>
#include <numeric>

#include "engine/errors.h"
#include "engine/op_scope.h"

namespace dyllm {

std::vector<int32_t> RowSet::seq_offsets(int n_seq) const {
    std::vector<int32_t> off(size_t(n_seq) + 1, 0);
    for (int32_t s : seq) off[size_t(s) + 1]++;
    for (int b = 0; b < n_seq; ++b) off[size_t(b) + 1] += off[size_t(b)];
    return off;
}

RowSet all_rows(const BatchLayout& lay) {
    RowSet r;
    for (int b = 0; b < lay.n_seq(); ++b)
        for (int32_t p = 0; p < lay.seq_len(b); ++p) r.push(lay.cu[b] + p, b, p);
    return r;
}

RowSet response_rows(const BatchLayout& lay, bool with_last_prompt_row) {
    RowSet r;
    for (int b = 0; b < lay.n_seq(); ++b) {
        const int32_t P = lay.prompt_len[b];
        const int32_t first = (with_last_prompt_row && P > 0) ? P - 1 : P;
        for (int32_t p = first; p < lay.seq_len(b); ++p) r.push(lay.cu[b] + p, b, p);
    }
    return r;
}

size_t cache_bytes(const std::vector<LayerCache>& caches) {
    size_t n = 0;
    for (const auto& c : caches)
        for (const Tensor* t : {&c.k, &c.v, &c.ctx, &c.ffn, &c.attn_out}) n += t->view().data ? t->view().bytes() : 0;
    return n;
}

namespace {

// Indices into `outer` (ascending rows) of each row of `inner` (a subset, ascending).
std::vector<int32_t> index_within(const RowSet& outer, const RowSet& inner) {
    std::vector<int32_t> idx;
    idx.reserve(inner.size());
    size_t j = 0;
    for (int32_t r : inner.rows) {
        while (j < outer.rows.size() && outer.rows[j] < r) ++j;
        DYLLM_ASSERT(j < outer.rows.size() && outer.rows[j] == r, "row set is not a subset of the query rows");
        idx.push_back(int32_t(j));
    }
    return idx;
}

TensorView empty_view() { return TensorView{}; }

}  // namespace

Forward::Forward(const ModelConfig& cfg, const ModelWeights& w, Backend& be, EventSink* sink)
    : cfg_(cfg), w_(w), be_(be), sink_(sink), acc_(size_t(cfg.n_layer)) {}

void Forward::begin_step() {
    acc_.assign(size_t(cfg_.n_layer), LayerAccount{});
    head_flops_ = 0;
}

double Forward::flops() const {
    double f = head_flops_;
    for (const auto& a : acc_) f += a.flops;
    return f;
}

void Forward::matmul(int l, OpClass op, const TensorView& x, const TensorView& w, const TensorView& b,
                     const TensorView& y) {
    if (x.rows() == 0) return;
    const double fl = 2.0 * double(x.rows()) * double(x.cols()) * double(y.cols());
    ScopedOp     s(sink_, step_, l, op, fl, double(w.bytes() + x.bytes() + y.bytes()), int32_t(x.rows()));
    be_.matmul(x, w, b, y);
    if (l >= 0) acc_[size_t(l)].flops += fl; else head_flops_ += fl;
}

void Forward::gather(int l, const TensorView& src, const std::vector<int32_t>& idx, const TensorView& dst) {
    if (idx.empty()) return;
    ScopedOp s(sink_, step_, l, OpClass::GatherScatter, 0, double(dst.bytes()) * 2, int32_t(idx.size()));
    be_.gather_rows(src, idx, dst);
}

void Forward::scatter(int l, const TensorView& src, const std::vector<int32_t>& idx, const TensorView& dst) {
    if (idx.empty()) return;
    ScopedOp s(sink_, step_, l, OpClass::GatherScatter, 0, double(src.bytes()) * 2, int32_t(idx.size()));
    be_.scatter_rows(src, idx, dst);
}

void Forward::cosine(int l, const TensorView& a, const TensorView& b, std::vector<float>& out) {
    out.assign(size_t(a.rows()), 1.0f);
    if (a.rows() == 0) return;
    const double fl = 6.0 * double(a.rows()) * double(a.cols());
    ScopedOp     s(sink_, step_, l, OpClass::Cosine, fl, double(a.bytes() + b.bytes()), int32_t(a.rows()));
    be_.cosine_rows(a, b, out);
    acc_[size_t(l)].flops += fl;
}

Tensor Forward::embed(const BatchLayout& lay, const RowSet& q) {
    Tensor               h = alloc(int64_t(q.size()), cfg_.n_embd);
    std::vector<int32_t> ids(q.size());
    for (size_t i = 0; i < q.size(); ++i) ids[i] = lay.tokens[size_t(q.rows[i])];
    if (!ids.empty()) {
        ScopedOp s(sink_, step_, -1, OpClass::Embed, 0, double(h.view().bytes()), int32_t(ids.size()));
        be_.embed(w_.tok_embd, ids, h);
    }
    return h;
}

// q, k, v projections (+ bias) of rows x: [n, n_embd]; any output may be null.
void Forward::qkv(int l, const TensorView& x, const RowSet& rows, Tensor* q, Tensor* k, Tensor* v) {
    const LayerWeights& L = w_.layers[size_t(l)];
    const int64_t       n = x.rows();
    if (q) *q = alloc(n, cfg_.q_dim()), matmul(l, OpClass::Qkv, x, L.wq, L.bq, *q);
    if (k) *k = alloc(n, cfg_.kv_dim()), matmul(l, OpClass::Qkv, x, L.wk, L.bk, *k);
    if (v) *v = alloc(n, cfg_.kv_dim()), matmul(l, OpClass::Qkv, x, L.wv, L.bv, *v);
    if (n == 0) return;
    ScopedOp s(sink_, step_, l, OpClass::Rope, 0, 0, int32_t(n));
    if (q) be_.rope(*q, rows.pos, cfg_.n_head, cfg_.head_dim, cfg_.rope_theta);
    if (k) be_.rope(*k, rows.pos, cfg_.n_kv_head, cfg_.head_dim, cfg_.rope_theta);
}

// out = W_down (silu(W_gate x) * W_up x); x: [n, n_embd], out: [n, n_embd].
void Forward::ffn(int l, const TensorView& x, const TensorView& out) {
    const LayerWeights& L = w_.layers[size_t(l)];
    const int64_t       n = x.rows();
    if (n == 0) return;
    Tensor gate = alloc(n, cfg_.n_ff), up = alloc(n, cfg_.n_ff);
    matmul(l, OpClass::Ffn, x, L.w_gate, empty_view(), gate);
    matmul(l, OpClass::Ffn, x, L.w_up, empty_view(), up);
    {
        ScopedOp s(sink_, step_, l, OpClass::Ffn, 0, 0, int32_t(n));
        be_.silu_mul(gate, up, gate);
    }
    matmul(l, OpClass::Ffn, gate, L.w_down, empty_view(), out);
}

// Exact attention of query rows (q: [rows.size(), q_dim]) against every key of their sequences in c.k / c.v.
void Forward::attention(int l, const TensorView& q, const RowSet& rows, const LayerCache& c, const BatchLayout& lay,
                        const TensorView& out) {
    if (rows.empty()) return;
    double fl = 0;
    for (int32_t s : rows.seq) fl += 4.0 * double(lay.seq_len(s)) * double(cfg_.q_dim());
    ScopedOp s(sink_, step_, l, OpClass::AttnExact, fl, 0, int32_t(rows.size()));
    be_.attention(q, rows.seq, c.k, c.v, lay.cu, AttentionShape{cfg_.n_head, cfg_.n_kv_head, cfg_.head_dim}, out);
    acc_[size_t(l)].flops += fl;
}

void Forward::layer_dense(int l, Tensor& h, const BatchLayout& lay, const RowSet& q, LayerCache& c, bool store_ctx,
                          bool store_ffn, SaliencyOutcome* measure, float tau) {
    const LayerWeights& L = w_.layers[size_t(l)];
    const int64_t       n = int64_t(q.size());
    LayerAccount&       A = acc_[size_t(l)];
    A.query_rows += int32_t(n), A.kv_rows += int32_t(n), A.attn_exact_rows += int32_t(n), A.ffn_rows += int32_t(n);
    if (n == 0) return;

    Tensor x = alloc(n, cfg_.n_embd);
    {
        ScopedOp s(sink_, step_, l, OpClass::Norm, 0, 0, int32_t(n));
        be_.rms_norm(h, L.attn_norm, cfg_.norm_eps, x);
    }
    Tensor Q, K, V;
    qkv(l, x, q, &Q, &K, &V);
    scatter(l, K, q.rows, c.k);
    scatter(l, V, q.rows, c.v);

    Tensor ctx = alloc(n, cfg_.q_dim());
    attention(l, Q, q, c, lay, ctx);

    if (measure) {
        Tensor old = alloc(n, cfg_.q_dim());
        gather(l, c.ctx, q.rows, old);
        measure->tested = q;
        cosine(l, ctx, old, measure->cosines);
        measure->salient = RowSet{};
        for (size_t i = 0; i < q.size(); ++i)
            if (measure->cosines[i] < tau) measure->salient.push(q.rows[i], q.seq[i], q.pos[i]);
    }
    if (store_ctx || measure) scatter(l, ctx, q.rows, c.ctx);

    Tensor a = alloc(n, cfg_.n_embd);
    matmul(l, OpClass::OProj, ctx, L.wo, empty_view(), a);
    be_.add(h, a, h);

    Tensor x2 = alloc(n, cfg_.n_embd);
    {
        ScopedOp s(sink_, step_, l, OpClass::Norm, 0, 0, int32_t(n));
        be_.rms_norm(h, L.ffn_norm, cfg_.norm_eps, x2);
    }
    Tensor m = alloc(n, cfg_.n_embd);
    ffn(l, x2, m);
    if (store_ffn) scatter(l, m, q.rows, c.ffn);
    be_.add(h, m, h);
}

void Forward::layer_sparse(int l, Tensor& h, const BatchLayout& lay, const RowSet& q, const RowSet& s_prev,
                           LayerCache& c, float tau, bool approx, SaliencyOutcome& out) {
    const LayerWeights& L  = w_.layers[size_t(l)];
    const int64_t       n  = int64_t(q.size());
    const int64_t       ns = int64_t(s_prev.size());
    LayerAccount&       A  = acc_[size_t(l)];
    A.query_rows += int32_t(n);
    A.kv_rows += int32_t(ns);
    out.tested = q;
    out.salient = RowSet{};
    out.cosines.clear();
    if (n == 0) return;

    // 1-2: norm and Q for every query row; K/V only for S_{l-1}.
    Tensor x = alloc(n, cfg_.n_embd);
    {
        ScopedOp s(sink_, step_, l, OpClass::Norm, 0, 0, int32_t(n));
        be_.rms_norm(h, L.attn_norm, cfg_.norm_eps, x);
    }
    Tensor Q;
    qkv(l, x, q, &Q, nullptr, nullptr);
    const std::vector<int32_t> idx_s = index_within(q, s_prev);
    Tensor                     xs    = alloc(ns, cfg_.n_embd);
    gather(l, x, idx_s, xs);
    Tensor Ks, Vs;
    qkv(l, xs, s_prev, nullptr, &Ks, &Vs);

    // 3-4: patch the K cache; dV = v_new - v_cached on the salient rows (rounded to the cache dtype, spec f.10).
    scatter(l, Ks, s_prev.rows, c.k);
    Tensor v_old = alloc(ns, cfg_.kv_dim());
    gather(l, c.v, s_prev.rows, v_old);
    Tensor dv = alloc_cache(ns, cfg_.kv_dim());
    if (ns > 0) be_.sub(Vs, v_old, dv);
    scatter(l, Vs, s_prev.rows, c.v);

    // 5-6: exact rows for S_{l-1}, column-sparse approximation for the rest.
    Tensor c_old = alloc(n, cfg_.q_dim());
    gather(l, c.ctx, q.rows, c_old);
    Tensor c_new = alloc(n, cfg_.q_dim());
    if (approx) {
        double fl = 0;
        const std::vector<int32_t> cu_sal = s_prev.seq_offsets(lay.n_seq());
        for (int32_t s : q.seq)
            fl += 2.0 * double(cfg_.q_dim()) * double(lay.seq_len(s) + (cu_sal[size_t(s) + 1] - cu_sal[size_t(s)]));
        {
            ScopedOp sc(sink_, step_, l, OpClass::AttnApprox, fl, 0, int32_t(n));
            be_.attention_approx(Q, q.seq, c.k, dv, s_prev.rows, cu_sal, lay.cu, c_old,
                                 AttentionShape{cfg_.n_head, cfg_.n_kv_head, cfg_.head_dim}, c_new);
        }
        A.flops += fl;
        Tensor qs = alloc(ns, cfg_.q_dim()), o_sal = alloc(ns, cfg_.q_dim());
        gather(l, Q, idx_s, qs);
        attention(l, qs, s_prev, c, lay, o_sal);
        scatter(l, o_sal, idx_s, c_new);
        A.attn_exact_rows += int32_t(ns);
        A.attn_approx_rows += int32_t(n - ns);
    } else {
        attention(l, Q, q, c, lay, c_new);
        A.attn_exact_rows += int32_t(n);
    }

    // 7-8: one cosine per token over all heads; S_l = {cos < tau}; the cache keeps the (approximate) new context.
    cosine(l, c_new, c_old, out.cosines);
    for (size_t i = 0; i < q.size(); ++i)
        if (out.cosines[i] < tau) out.salient.push(q.rows[i], q.seq[i], q.pos[i]);
    scatter(l, c_new, q.rows, c.ctx);

    // 9-10: dense o_proj; FFN only for S_l, cached FFN output for every other row.
    Tensor a = alloc(n, cfg_.n_embd);
    matmul(l, OpClass::OProj, c_new, L.wo, empty_view(), a);
    be_.add(h, a, h);
    Tensor x2 = alloc(n, cfg_.n_embd);
    {
        ScopedOp s(sink_, step_, l, OpClass::Norm, 0, 0, int32_t(n));
        be_.rms_norm(h, L.ffn_norm, cfg_.norm_eps, x2);
    }
    const std::vector<int32_t> idx_l = index_within(q, out.salient);
    const int64_t              nl    = int64_t(idx_l.size());
    Tensor                     x2s = alloc(nl, cfg_.n_embd), m = alloc(nl, cfg_.n_embd);
    gather(l, x2, idx_l, x2s);
    ffn(l, x2s, m);
    scatter(l, m, out.salient.rows, c.ffn);
    A.ffn_rows += int32_t(nl);
    Tensor m_all = alloc(n, cfg_.n_embd);
    gather(l, c.ffn, q.rows, m_all);
    be_.add(h, m_all, h);
}

void Forward::layer_dllm_cache(int l, Tensor& h, const BatchLayout& lay, const RowSet& attn_rows,
                               const RowSet& gen_rows, bool adaptive, float rho, LayerCache& c) {
    const LayerWeights& L = w_.layers[size_t(l)];
    LayerAccount&       A = acc_[size_t(l)];
    const int64_t       N = lay.n_rows();
    auto norm_rows = [&](const TensorView& w, const std::vector<int32_t>& rows) {
        Tensor g = alloc(int64_t(rows.size()), cfg_.n_embd);
        gather(l, h, rows, g);
        if (!rows.empty()) {
            ScopedOp s(sink_, step_, l, OpClass::Norm, 0, 0, int32_t(rows.size()));
            be_.rms_norm(g, w, cfg_.norm_eps, g);
        }
        return g;
    };
    // Recompute Q/K/V, attention and o_proj for `rows` (x: their normed inputs; k/v recomputed unless given).
    auto recompute_attention = [&](const RowSet& rows, const Tensor& x, bool with_v) {
        const int64_t n = int64_t(rows.size());
        if (n == 0) return;
        Tensor Q, K, V;
        qkv(l, x, rows, &Q, &K, with_v ? &V : nullptr);
        scatter(l, K, rows.rows, c.k);
        if (with_v) scatter(l, V, rows.rows, c.v);
        Tensor o = alloc(n, cfg_.q_dim()), a = alloc(n, cfg_.n_embd);
        attention(l, Q, rows, c, lay, o);
        matmul(l, OpClass::OProj, o, L.wo, empty_view(), a);
        scatter(l, a, rows.rows, c.attn_out);
        A.query_rows += int32_t(n), A.attn_exact_rows += int32_t(n);
    };

    recompute_attention(attn_rows, norm_rows(L.attn_norm, attn_rows.rows), true);
    A.kv_rows += int32_t(attn_rows.size());

    RowSet transfer;  // adaptive update: the rho share of response rows whose V changed most
    if (adaptive && rho > 0.f && !gen_rows.empty()) {
        Tensor xg = norm_rows(L.attn_norm, gen_rows.rows);
        Tensor vg = alloc(int64_t(gen_rows.size()), cfg_.kv_dim());
        matmul(l, OpClass::Qkv, xg, L.wv, L.bv, vg);
        Tensor v_old = alloc(int64_t(gen_rows.size()), cfg_.kv_dim());
        gather(l, c.v, gen_rows.rows, v_old);
        std::vector<float> cos;
        cosine(l, vg, v_old, cos);
        scatter(l, vg, gen_rows.rows, c.v);  // V replaced for every response token
        A.kv_rows += int32_t(gen_rows.size());
        const std::vector<int32_t> off = gen_rows.seq_offsets(lay.n_seq());
        std::vector<int32_t>       pick;
        for (int b = 0; b < lay.n_seq(); ++b) {
            const int32_t        lo = off[size_t(b)], hi = off[size_t(b) + 1];
            const int32_t        k  = int32_t(float(hi - lo) * rho);  // int(gen_len * rho), spec e
            std::vector<int32_t> order(size_t(hi - lo));
            std::iota(order.begin(), order.end(), lo);
            std::stable_sort(order.begin(), order.end(), [&](int32_t i, int32_t j) { return cos[size_t(i)] < cos[size_t(j)]; });
            pick.insert(pick.end(), order.begin(), order.begin() + std::min<int32_t>(k, hi - lo));
        }
        std::sort(pick.begin(), pick.end());
        for (int32_t i : pick) transfer.push(gen_rows.rows[size_t(i)], gen_rows.seq[size_t(i)], gen_rows.pos[size_t(i)]);
        Tensor xt = alloc(int64_t(pick.size()), cfg_.n_embd);
        gather(l, xg, pick, xt);
        recompute_attention(transfer, xt, false);
    }

    Tensor a_all = alloc(N, cfg_.n_embd);
    gather(l, c.attn_out, all_rows(lay).rows, a_all);
    be_.add(h, a_all, h);

    // FFN for the recomputed rows; every other row reuses its cached FFN output.
    RowSet ffn_rows;
    {
        std::vector<int32_t> r = attn_rows.rows;
        r.insert(r.end(), transfer.rows.begin(), transfer.rows.end());
        std::sort(r.begin(), r.end());
        r.erase(std::unique(r.begin(), r.end()), r.end());
        int b = 0;
        for (int32_t row : r) {
            while (row >= lay.cu[size_t(b) + 1]) ++b;
            ffn_rows.push(row, b, row - lay.cu[size_t(b)]);
        }
    }
    Tensor x2 = norm_rows(L.ffn_norm, ffn_rows.rows);
    Tensor m  = alloc(int64_t(ffn_rows.size()), cfg_.n_embd);
    ffn(l, x2, m);
    scatter(l, m, ffn_rows.rows, c.ffn);
    A.ffn_rows += int32_t(ffn_rows.size());
    Tensor m_all = alloc(N, cfg_.n_embd);
    gather(l, c.ffn, all_rows(lay).rows, m_all);
    be_.add(h, m_all, h);
}

Tensor Forward::logits(const Tensor& h, const std::vector<int32_t>& idx) {
    const int64_t n = int64_t(idx.size());
    Tensor        x = alloc(n, cfg_.n_embd);
    Tensor        y = alloc(n, cfg_.n_vocab);
    if (n == 0) return y;
    gather(-1, h, idx, x);
    {
        ScopedOp s(sink_, step_, -1, OpClass::Norm, 0, 0, int32_t(n));
        be_.rms_norm(x, w_.out_norm, cfg_.norm_eps, x);
    }
    matmul(-1, OpClass::LmHead, x, w_.lm_head, empty_view(), y);
    return y;
}

double Forward::dense_flops(const BatchLayout& lay, int64_t n_logit_rows) const {
    const double N = lay.n_rows(), d = cfg_.n_embd, qd = double(cfg_.q_dim()), kvd = double(cfg_.kv_dim());
    double       sq = 0;
    for (int b = 0; b < lay.n_seq(); ++b) sq += double(lay.seq_len(b)) * double(lay.seq_len(b));
    const double per_layer = 2 * N * d * (qd + 2 * kvd) + 4 * sq * qd + 2 * N * qd * d + 6 * N * d * double(cfg_.n_ff);
    return per_layer * cfg_.n_layer + 2.0 * double(n_logit_rows) * d * double(cfg_.n_vocab);
}

}  // namespace dyllm
