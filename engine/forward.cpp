// Forward-pass building blocks (see forward.h): the dense layer over any query rows, the LM head, and the timed and
// counted ops the methods build their own layers from (engine/methods/).
#include "engine/forward.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/errors.h"
#include "engine/op_scope.h"

namespace dyllm {

void RowSet::seq_offsets(int n_seq, std::vector<int32_t>& off) const {
    off.assign(size_t(n_seq) + 1, 0);
    for (int32_t s : seq) off[size_t(s) + 1]++;
    for (int b = 0; b < n_seq; ++b) off[size_t(b) + 1] += off[size_t(b)];
}

TensorView rows_in_place(const TensorView& t, const RowSet& q) {
    if (!q.is_range() || t.empty() || t.dtype != DType::F32 || !t.contiguous() || q.rows.back() >= t.rows()) return {};
    return TensorView::matrix(t.row<char>(q.rows.front()), t.dtype, t.device, int64_t(q.size()), t.cols());
}

void all_rows(const BatchLayout& lay, RowSet& out) {
    out.clear();
    for (int b = 0; b < lay.n_seq(); ++b)
        for (int32_t p = 0; p < lay.seq_len(b); ++p) out.push(lay.cu[b] + p, b, p);
}

RowSet all_rows(const BatchLayout& lay) {
    RowSet r;
    all_rows(lay, r);
    return r;
}

void response_rows(const BatchLayout& lay, bool with_last_prompt_row, RowSet& out) {
    out.clear();
    for (int b = 0; b < lay.n_seq(); ++b) {
        const int32_t P     = lay.prompt_len[b];
        const int32_t first = (with_last_prompt_row && P > 0) ? P - 1 : P;
        for (int32_t p = first; p < lay.seq_len(b); ++p) out.push(lay.cu[b] + p, b, p);
    }
}

RowSet response_rows(const BatchLayout& lay, bool with_last_prompt_row) {
    RowSet r;
    response_rows(lay, with_last_prompt_row, r);
    return r;
}

size_t cache_bytes(const std::vector<LayerCache>& caches) {
    size_t n = 0;
    for (const auto& c : caches)
        for (const Tensor* t : c.tensors()) n += t->view().data ? t->view().bytes() : 0;
    return n;
}

void index_within(const RowSet& outer, const RowSet& inner, std::vector<int32_t>& out) {
    out.clear();
    out.reserve(inner.size());
    size_t j = 0;
    for (int32_t r : inner.rows) {
        while (j < outer.rows.size() && outer.rows[j] < r) ++j;
        DYLLM_ASSERT(j < outer.rows.size() && outer.rows[j] == r, "row set is not a subset of the query rows");
        out.push_back(int32_t(j));
    }
}

std::vector<int32_t> index_within(const RowSet& outer, const RowSet& inner) {
    std::vector<int32_t> idx;
    index_within(outer, inner, idx);
    return idx;
}

namespace {

TensorView empty_view() {
    return TensorView{};
}

}  // namespace

Forward::Forward(const ModelConfig& cfg, const ModelWeights& w, Backend& be, EventSink* sink, Workspace* ws)
    : cfg_(cfg), w_(w), be_(be), sink_(sink), acc_(size_t(cfg.n_layer)), ws_(ws) {}

void Forward::begin_step(const BatchLayout& lay) {
    acc_.assign(size_t(cfg_.n_layer), LayerAccount{});
    head_flops_ = 0;
    if (ws_) ws_->reset();
    // Reserved here, on every kind of step, so a method's first sparse step does not grow them.
    cu_sal_.reserve(size_t(lay.n_seq()) + 1);
    lse_host_.reserve(size_t(lay.n_rows()) * size_t(cfg_.n_head));
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
    if (l >= 0)
        acc_[size_t(l)].flops += fl;
    else
        head_flops_ += fl;
}

void Forward::norm(int l, const TensorView& x, const TensorView& w, const TensorView& y) {
    ScopedOp s(sink_, step_, l, OpClass::Norm, 0, 0, int32_t(x.rows()));
    be_.rms_norm(x, w, cfg_.norm_eps, y);
}

void Forward::residual_add(int l, const TensorView& h, const TensorView& a) {
    ScopedOp s(sink_, step_, l, OpClass::Residual, 0, double(h.bytes()) * 2 + double(a.bytes()), int32_t(h.rows()));
    be_.add(h, a, h);
}

void Forward::residual_add_rows(int l, const TensorView& src, std::span<const int32_t> idx, const TensorView& h) {
    const double row_bytes = double(h.bytes()) / double(std::max<int64_t>(1, h.rows()));
    ScopedOp     s(sink_, step_, l, OpClass::Residual, 0, row_bytes * 3 * double(idx.size()), int32_t(idx.size()));
    be_.add_rows(src, idx, h);
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
    Tensor h = alloc(int64_t(q.size()), cfg_.n_embd);
    ids_.resize(q.size());
    for (size_t i = 0; i < q.size(); ++i) ids_[i] = lay.tokens[size_t(q.rows[i])];
    if (!ids_.empty()) {
        ScopedOp s(sink_, step_, -1, OpClass::Embed, 0, double(h.view().bytes()), int32_t(ids_.size()));
        be_.embed(w_.tok_embd, ids_, h);
    }
    return h;
}

// q, k, v projections (+ bias) of rows x: [n, n_embd]; any output may be null.
void Forward::qkv(int l, const TensorView& x, const RowSet& rows, Tensor* q, Tensor* k, Tensor* v,
                  const TensorView& k_to, const TensorView& v_to) {
    const LayerWeights& L = w_.layers[size_t(l)];
    const int64_t       n = x.rows();
    if (q) {
        *q = alloc(n, cfg_.q_dim());
        matmul(l, OpClass::Qkv, x, L.wq, L.bq, *q);
    }
    if (k) {
        *k = k_to.data ? Tensor::borrowed(k_to) : alloc(n, cfg_.kv_dim());
        matmul(l, OpClass::Qkv, x, L.wk, L.bk, *k);
    }
    if (v) {
        *v = v_to.data ? Tensor::borrowed(v_to) : alloc(n, cfg_.kv_dim());
        matmul(l, OpClass::Qkv, x, L.wv, L.bv, *v);
    }
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
                        const TensorView& out, LayerCache* keep_lse) {
    if (rows.empty()) return;
    double fl = 0;
    for (int32_t s : rows.seq) fl += 4.0 * double(lay.seq_len(s)) * double(cfg_.q_dim());
    const bool lse      = keep_lse && !keep_lse->lse.view().empty();
    Tensor     lse_rows = lse ? alloc(int64_t(rows.size()), cfg_.n_head) : Tensor{};
    {
        ScopedOp s(sink_, step_, l, OpClass::AttnExact, fl, 0, int32_t(rows.size()));
        be_.attention(q, rows.seq, c.k, c.v, lay.cu, AttentionShape{cfg_.n_head, cfg_.n_kv_head, cfg_.head_dim}, out,
                      lse ? lse_rows.view() : TensorView{});
    }
    if (lse) scatter(l, lse_rows, rows.rows, keep_lse->lse);
    acc_[size_t(l)].flops += fl;
}

void Forward::attention_keys(int l, const TensorView& q, const RowSet& rows, const LayerCache& c, const KeySubset& keys,
                             const TensorView& out) {
    if (rows.empty()) return;
    double fl = 0;
    for (int32_t s : rows.seq) fl += 4.0 * double(keys.cu[size_t(s) + 1] - keys.cu[size_t(s)]) * double(cfg_.q_dim());
    const int64_t nk = int64_t(keys.rows.size());
    Tensor        k = alloc_cache(nk, cfg_.kv_dim()), v = alloc_cache(nk, cfg_.kv_dim());
    gather(l, c.k, keys.rows, k);
    gather(l, c.v, keys.rows, v);
    {
        ScopedOp s(sink_, step_, l, OpClass::AttnExact, fl, 0, int32_t(rows.size()));
        be_.attention(q, rows.seq, k, v, keys.cu, AttentionShape{cfg_.n_head, cfg_.n_kv_head, cfg_.head_dim}, out);
    }
    acc_[size_t(l)].flops += fl;
}

void Forward::attention_probs(int l, const TensorView& q, const RowSet& rows, const LayerCache& c,
                              const BatchLayout& lay, std::vector<float>& out, bool per_head) {
    out.clear();
    if (rows.empty()) return;
    const int     H = cfg_.n_head, D = cfg_.head_dim, group = cfg_.n_head / cfg_.n_kv_head;
    const int64_t qd = cfg_.q_dim(), kvd = cfg_.kv_dim(), n_keys = c.k.view().rows();
    double        n_pairs = 0;
    for (int32_t s : rows.seq) n_pairs += double(lay.seq_len(s));
    out.reserve(size_t(n_pairs) * (per_head ? size_t(H) : 1));
    const double fl = n_pairs * (2.0 * double(qd) + double(H));
    ScopedOp     scope(sink_, step_, l, OpClass::Other, fl, 0, int32_t(rows.size()));
    q_host_.resize(size_t(int64_t(rows.size()) * qd));
    k_host_.resize(size_t(n_keys * kvd));
    be_.download(q, q_host_.data());
    if (c.k.view().dtype == DType::F32 && c.k.view().contiguous()) {
        be_.download(c.k, k_host_.data());
    } else {
        Tensor k32 = alloc(n_keys, kvd);
        be_.copy(c.k, k32);
        be_.download(k32, k_host_.data());
    }
    const double scale = 1.0 / std::sqrt(double(D));
    for (size_t i = 0; i < rows.size(); ++i) {
        const int     b  = rows.seq[i];
        const int64_t k0 = lay.cu[size_t(b)], len = lay.seq_len(b);
        const size_t  o = out.size();
        out.resize(o + size_t(len) * (per_head ? size_t(H) : 1), 0.f);
        for (int h = 0; h < H; ++h) {
            const float* qh = q_host_.data() + int64_t(i) * qd + int64_t(h) * D;
            w_host_.assign(size_t(len), 0.0);
            double m = -INFINITY;
            for (int64_t j = 0; j < len; ++j) {
                const float* kj = k_host_.data() + (k0 + j) * kvd + int64_t(h / group) * D;
                // Eight independent fp32 partial sums (one vector register's worth), added in fp64: the rounding
                // of an fp32 matmul's dot product, as the authors' eager attention computes these scores.
                float acc[8] = {};
                int   e      = 0;
                for (; e + 8 <= D; e += 8)
                    for (int u = 0; u < 8; ++u) acc[u] += qh[e + u] * kj[e + u];
                double d = 0;
                for (float a : acc) d += double(a);
                for (; e < D; ++e) d += double(qh[e]) * double(kj[e]);
                w_host_[size_t(j)] = d * scale;
                m                  = std::max(m, d * scale);
            }
            double z = 0;
            for (double& w : w_host_) z += (w = std::exp(w - m));
            if (per_head) {
                for (int64_t j = 0; j < len; ++j)
                    out[o + size_t(h) * size_t(len) + size_t(j)] = float(w_host_[size_t(j)] / z);
                continue;
            }
            for (int64_t j = 0; j < len; ++j) out[o + size_t(j)] += float(w_host_[size_t(j)] / z / H);
        }
    }
    acc_[size_t(l)].flops += fl;
}

void Forward::attention_cols(int l, const TensorView& q, const RowSet& rows, LayerCache& c, const TensorView& dv,
                             const RowSet& salient, const BatchLayout& lay, const TensorView& c_old,
                             const TensorView& c_new, std::vector<int32_t>& fallback, const TensorView& k_old,
                             const TensorView& v_old) {
    fallback.clear();
    if (rows.empty()) return;
    // Per salient key of the row's sequence: q k^T and p dV (plain, 4 D per head); the incremental form adds the old
    // key's score and the old value's term (8 D).
    const bool            inc    = k_old.data != nullptr;
    std::vector<int32_t>& cu_sal = cu_sal_;  // kept between calls
    salient.seq_offsets(lay.n_seq(), cu_sal);
    double fl = 0;
    for (int32_t s : rows.seq)
        fl += (inc ? 8.0 : 4.0) * double(cfg_.q_dim()) * double(cu_sal[size_t(s) + 1] - cu_sal[size_t(s)]);
    Tensor lse = alloc(int64_t(rows.size()), cfg_.n_head);
    gather(l, c.lse, rows.rows, lse);
    {
        ScopedOp sc(sink_, step_, l, OpClass::AttnApprox, fl, 0, int32_t(rows.size()));
        be_.attention_cols(q, rows.seq, c.k, dv, salient.rows, cu_sal, lay.cu, lse, c_old,
                           AttentionShape{cfg_.n_head, cfg_.n_kv_head, cfg_.head_dim}, c_new, k_old, v_old,
                           inc ? lse.view() : TensorView{});
    }
    acc_[size_t(l)].flops += fl;
    if (!inc) return;
    std::vector<float>& host = lse_host_;
    host.resize(size_t(lse.view().numel()));
    be_.download(lse, host.data());
    for (size_t i = 0; i < rows.size(); ++i)
        for (int h = 0; h < cfg_.n_head; ++h)
            if (std::isnan(host[i * size_t(cfg_.n_head) + size_t(h)])) {
                fallback.push_back(int32_t(i));
                break;
            }
    scatter(l, lse, rows.rows, c.lse);  // fallback rows get NaN here, then their exact attention's statistics
}

void Forward::attention_approx(int l, const TensorView& q, const RowSet& rows, const LayerCache& c,
                               const TensorView& dv, const RowSet& salient, const BatchLayout& lay,
                               const TensorView& c_old, const TensorView& c_new) {
    attention_approx_exact(l, q, rows, c, dv, salient, lay, c_old, c_new, {}, RowSet{});
}

void Forward::attention_approx_exact(int l, const TensorView& q, const RowSet& rows, const LayerCache& c,
                                     const TensorView& dv, const RowSet& salient, const BatchLayout& lay,
                                     const TensorView& c_old, const TensorView& c_new,
                                     const std::vector<int32_t>& exact, const RowSet& exact_rows) {
    if (rows.empty()) return;
    const bool fused = !exact.empty() && be_.fuses_exact_rows();
    // q K^T over every key of the row's sequence, then P dV over its salient keys; a fused exact row P V over every
    // key instead (what attention() counts for it). A row of a sequence without salient keys keeps its context: no
    // work (the kernels skip it), unless it is a fused exact row (scores and P V over every key).
    std::vector<int32_t>& cu_sal = cu_sal_;  // kept between calls
    salient.seq_offsets(lay.n_seq(), cu_sal);
    const auto   n_sal = [&cu_sal](int32_t s) { return double(cu_sal[size_t(s) + 1] - cu_sal[size_t(s)]); };
    const double d     = double(cfg_.q_dim());
    double       fl    = 0;
    for (int32_t s : rows.seq)
        if (n_sal(s) > 0) fl += 2.0 * d * (double(lay.seq_len(s)) + n_sal(s));
    if (fused)
        for (int32_t i : exact) {
            const int32_t s = rows.seq[size_t(i)];
            fl += n_sal(s) > 0 ? 2.0 * d * (double(lay.seq_len(s)) - n_sal(s)) : 4.0 * d * double(lay.seq_len(s));
        }
    {
        ScopedOp             sc(sink_, step_, l, OpClass::AttnApprox, fl, 0, int32_t(rows.size()));
        const AttentionShape shape{cfg_.n_head, cfg_.n_kv_head, cfg_.head_dim};
        if (fused)
            be_.attention_approx_exact(q, rows.seq, c.k, c.v, dv, salient.rows, cu_sal, lay.cu, exact, c_old, shape,
                                       c_new);
        else
            be_.attention_approx(q, rows.seq, c.k, dv, salient.rows, cu_sal, lay.cu, c_old, shape, c_new);
    }
    acc_[size_t(l)].flops += fl;
    if (fused || exact.empty()) return;
    const int64_t ne = int64_t(exact.size());
    Tensor        qe = alloc(ne, cfg_.q_dim()), o_e = alloc(ne, cfg_.q_dim());
    gather(l, q, exact, qe);
    attention(l, qe, exact_rows, c, lay, o_e);
    scatter(l, o_e, exact, c_new);
}

void Forward::layer_dense(int l, Tensor& h, const BatchLayout& lay, const RowSet& q, LayerCache& c, StoreOutputs store,
                          SaliencyOutcome* measure, float tau) {
    const bool          store_ctx = store.ctx, store_ffn = store.ffn;
    const LayerWeights& L = w_.layers[size_t(l)];
    const int64_t       n = int64_t(q.size());
    LayerAccount&       A = acc_[size_t(l)];
    A.query_rows += int32_t(n);
    A.kv_rows += int32_t(n);
    A.attn_exact_rows += int32_t(n);
    A.ffn_rows += int32_t(n);
    if (store.attn_probs) store.attn_probs->clear();
    if (n == 0) return;

    Tensor x = alloc(n, cfg_.n_embd);
    norm(l, h, L.attn_norm, x);
    // Rows that are one ascending run (every row of a dense step; a block) land in the caches directly, as row ranges,
    // instead of through temporaries and scatters: the same values, two to four copies fewer per layer.
    const TensorView k_to = rows_in_place(c.k, q), v_to = rows_in_place(c.v, q);
    const bool       kv_direct = !k_to.empty() && !v_to.empty();
    Tensor           Q, K, V;
    qkv(l, x, q, &Q, &K, &V, kv_direct ? k_to : TensorView{}, kv_direct ? v_to : TensorView{});
    if (!kv_direct) {
        scatter(l, K, q.rows, c.k);
        scatter(l, V, q.rows, c.v);
    }

    // The context goes straight to the cache unless the saliency test must first read the old one.
    const TensorView ctx_to = store_ctx && !measure ? rows_in_place(c.ctx, q) : TensorView{};
    Tensor           ctx    = !ctx_to.empty() ? Tensor::borrowed(ctx_to) : alloc(n, cfg_.q_dim());
    DYLLM_ASSERT(!store.keys || !store.attn_probs, "layer_dense: attention probabilities over a key subset");
    if (store.keys)
        attention_keys(l, Q, q, c, *store.keys, ctx);
    else
        attention(l, Q, q, c, lay, ctx, &c);
    if (store.queries) *store.queries = Q;
    if (store.attn_probs) attention_probs(l, Q, q, c, lay, *store.attn_probs);

    if (measure) {
        Tensor old = alloc(n, cfg_.q_dim());
        gather(l, c.ctx, q.rows, old);
        measure->tested = q;
        cosine(l, ctx, old, measure->cosines);
        measure->salient = RowSet{};
        for (size_t i = 0; i < q.size(); ++i)
            if (measure->cosines[i] < tau) measure->salient.push(q.rows[i], q.seq[i], q.pos[i]);
    }
    if ((store_ctx || measure) && ctx_to.empty()) scatter(l, ctx, q.rows, c.ctx);

    Tensor a = alloc(n, cfg_.n_embd);
    matmul(l, OpClass::OProj, ctx, L.wo, empty_view(), a);
    residual_add(l, h, a);

    Tensor x2 = alloc(n, cfg_.n_embd);
    norm(l, h, L.ffn_norm, x2);
    const TensorView ffn_to = store_ffn ? rows_in_place(c.ffn, q) : TensorView{};
    Tensor           m      = !ffn_to.empty() ? Tensor::borrowed(ffn_to) : alloc(n, cfg_.n_embd);
    ffn(l, x2, m);
    if (store_ffn && ffn_to.empty()) scatter(l, m, q.rows, c.ffn);
    residual_add(l, h, m);
}

Tensor Forward::logits(const Tensor& h, const std::vector<int32_t>& idx) {
    const int64_t n = int64_t(idx.size());
    Tensor        x = alloc(n, cfg_.n_embd);
    Tensor        y = alloc(n, cfg_.n_vocab);
    if (n == 0) return y;
    gather(-1, h, idx, x);
    norm(-1, x, w_.out_norm, x);
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

Tensor Forward::norm_rows(int l, const Tensor& h, const TensorView& w, const std::vector<int32_t>& rows) {
    Tensor g = alloc(int64_t(rows.size()), cfg_.n_embd);
    gather(l, h, rows, g);
    if (!rows.empty()) norm(l, g, w, g);
    return g;
}

void Forward::recompute_attention(int l, const RowSet& rows, const Tensor& x, LayerCache& c, const BatchLayout& lay,
                                  bool with_v) {
    const int64_t n = int64_t(rows.size());
    if (n == 0) return;
    const LayerWeights& L = w_.layers[size_t(l)];
    // One run of rows (a full refresh) goes straight into the caches' row ranges (rows_in_place).
    const TensorView k_to = rows_in_place(c.k, rows), v_to = with_v ? rows_in_place(c.v, rows) : TensorView{};
    const bool       kv_direct = !k_to.empty() && (!with_v || !v_to.empty());
    Tensor           Q, K, V;
    qkv(l, x, rows, &Q, &K, with_v ? &V : nullptr, kv_direct ? k_to : TensorView{}, kv_direct ? v_to : TensorView{});
    if (!kv_direct) {
        scatter(l, K, rows.rows, c.k);
        if (with_v) scatter(l, V, rows.rows, c.v);
    }
    const TensorView a_to = rows_in_place(c.attn_out, rows);
    Tensor           o    = alloc(n, cfg_.q_dim());
    Tensor           a    = !a_to.empty() ? Tensor::borrowed(a_to) : alloc(n, cfg_.n_embd);
    attention(l, Q, rows, c, lay, o);
    matmul(l, OpClass::OProj, o, L.wo, TensorView{}, a);
    if (a_to.empty()) scatter(l, a, rows.rows, c.attn_out);
    LayerAccount& A = acc_[size_t(l)];
    A.query_rows += int32_t(n);
    A.attn_exact_rows += int32_t(n);
}

// One add_rows per run of consecutive rows (one run per sequence at most), the run's indices being the cache rows it
// reads.
void Forward::add_cached(int l, const Tensor& cache, const RowSet& rows, Tensor& h) {
    const std::vector<int32_t>& r  = rows.rows;
    const TensorView            hv = h.view();
    DYLLM_ASSERT(hv.contiguous(), "add_cached: the hidden states must be one contiguous matrix");
    for (size_t i = 0; i < r.size();) {
        size_t j = i + 1;
        while (j < r.size() && r[j] == r[j - 1] + 1) ++j;
        const TensorView run = TensorView::matrix(hv.row<char>(r[i]), hv.dtype, hv.device, int64_t(j - i), hv.cols());
        residual_add_rows(l, cache, std::span<const int32_t>(r.data() + i, j - i), run);
        i = j;
    }
}

}  // namespace dyllm
