// Forward-pass building blocks written once against Backend: embedding, a dense layer over any set of
// query rows (original, DyLLM FULL steps, Fast-dLLM), the ops the methods build their own layers from
// (engine/methods/), and the LM head. Every op is timed (ScopedOp) and counted (FLOPs, rows) for the accounting.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "engine/backend.h"
#include "engine/io/checkpoint.h"
#include "engine/io/config.h"
#include "engine/engine.h"
#include "engine/op_scope.h"
#include "engine/workspace.h"
#include "instrumentation/events.h"

namespace dyllm {

// The batch's packed row layout ("k-space", engine/README.md §0): sequence b owns rows [cu[b], cu[b+1]).
struct BatchLayout {
    std::vector<int32_t> cu;          // [B+1]
    std::vector<int32_t> prompt_len;  // [B]
    std::vector<int32_t> tokens;      // [N] current token ids of every row

    int32_t n_seq() const { return int32_t(prompt_len.size()); }
    int32_t n_rows() const { return cu.empty() ? 0 : cu.back(); }
    int32_t seq_len(int b) const { return cu[b + 1] - cu[b]; }
};

// A set of rows of the batch, ascending by packed row index (so grouped by sequence).
struct RowSet {
    std::vector<int32_t> rows;  // packed row indices
    std::vector<int32_t> seq;   // batch-local sequence of each row
    std::vector<int32_t> pos;   // position of each row in its sequence

    size_t size() const { return rows.size(); }
    bool   empty() const { return rows.empty(); }
    void   push(int32_t row, int32_t s, int32_t p) { rows.push_back(row), seq.push_back(s), pos.push_back(p); }
    // clear() and reserve() keep the capacity: a set refilled every step allocates only while it grows.
    void clear() { rows.clear(), seq.clear(), pos.clear(); }
    void reserve(size_t n) { rows.reserve(n), seq.reserve(n), pos.reserve(n); }
    // Offsets of each sequence's slice into out: [B+1].
    void seq_offsets(int n_seq, std::vector<int32_t>& out) const;
    // Whether the rows are one ascending run r0, r0 + 1, ... (a dense step's, a block's, one sequence's response).
    bool is_range() const {
        for (size_t i = 1; i < rows.size(); ++i)
            if (rows[i] != rows[i - 1] + 1) return false;
        return !rows.empty();
    }
};

// Rows q of a cache as one view in place, when q is one ascending run of rows of an F32 (contiguous) cache that holds
// them; an empty view otherwise (the caller gathers or scatters instead).
TensorView rows_in_place(const TensorView& cache, const RowSet& q);

// The step loop's forms write into `out` (cleared first), so a set kept between steps is refilled in place.
void   all_rows(const BatchLayout& lay, RowSet& out);
RowSet all_rows(const BatchLayout& lay);
// Indices into `outer` (ascending rows) of each row of `inner` (a subset, ascending).
void                 index_within(const RowSet& outer, const RowSet& inner, std::vector<int32_t>& out);
std::vector<int32_t> index_within(const RowSet& outer, const RowSet& inner);
void                 response_rows(const BatchLayout& lay, bool with_last_prompt_row, RowSet& out);
RowSet               response_rows(const BatchLayout& lay, bool with_last_prompt_row);

// Some of each sequence's keys: packed rows, ascending within each sequence, sequence b's at [cu[b], cu[b+1]) of rows.
struct KeySubset {
    std::vector<int32_t> rows;
    std::vector<int32_t> cu;  // [B+1]
};

// Which of a dense layer's outputs are also written into their layer caches (K and V always are).
struct StoreOutputs {
    bool ctx = false;  // the attention context before o_proj, into c.ctx
    bool ffn = false;  // the FFN output before the residual add, into c.ffn
    // When set: each query row's attention probabilities over its sequence's keys, averaged over the heads, on the
    // host (attention_probs; d2Cache's attention rollout).
    std::vector<float>* attn_probs = nullptr;
    // When set: receives the query projection (after RoPE) of the rows, [q.size(), q_dim] (Sparse-dLLM ranks the
    // cached keys by its current block's queries).
    Tensor* queries = nullptr;
    // When set: attention reads only these keys of each sequence instead of all of them (attention_keys; Sparse-dLLM's
    // retained cache plus its current block).
    const KeySubset* keys = nullptr;
};

// Per-layer caches; a method allocates only what it uses (empty Tensors otherwise). All [N, width] in cache dtype.
struct LayerCache {
    Tensor k;         // [N, kv_dim] keys after RoPE
    Tensor v;         // [N, kv_dim]
    Tensor ctx;       // [N, q_dim] attention context before o_proj (DyLLM; cosine measurement)
    Tensor ffn;       // [N, n_embd] FFN output before the residual add (DyLLM, dLLM-Cache)
    Tensor attn_out;  // [N, n_embd] attention output after o_proj (dLLM-Cache)
    Tensor lse;       // [N, n_head] F32 log-sum-exp of each row's scores at its last exact attention (DyLLM columns)
    Tensor q;         // [N, q_dim] queries after RoPE, as each row was last computed (Elastic-Cache's drift test)
    Tensor hidden;    // [N, n_embd] the layer's input hidden states, as each row was last computed (Elastic-Cache)

    // Every cache tensor (empty ones included), for whole-cache operations (sizes, compaction).
    std::array<Tensor*, 8>       tensors() { return {&k, &v, &ctx, &ffn, &attn_out, &lse, &q, &hidden}; }
    std::array<const Tensor*, 8> tensors() const { return {&k, &v, &ctx, &ffn, &attn_out, &lse, &q, &hidden}; }
};

size_t cache_bytes(const std::vector<LayerCache>& caches);

// What one layer's saliency test produced (for events and the next layer).
struct SaliencyOutcome {
    RowSet             tested;   // the query rows that were tested
    std::vector<float> cosines;  // one per tested row
    RowSet             salient;  // S_l
    std::vector<float> drift;    // measure_drift: approx-vs-exact context cosine per tested row, NaN where exact
};

class Forward {
public:
    // ws: where the temporaries come from (one Workspace per run, so a steady run allocates nothing); null = the
    // backend's own allocations.
    Forward(const ModelConfig& cfg, const ModelWeights& w, Backend& be, EventSink* sink, Workspace* ws = nullptr);

    void set_step(int32_t step) { step_ = step; }
    void set_sink(EventSink* sink) { sink_ = sink; }
    // Resets the accounting (and coalesces the workspace); sizes the per-sequence host scratch for lay.
    void                             begin_step(const BatchLayout& lay);
    const std::vector<LayerAccount>& accounts() const { return acc_; }
    double                           flops() const;

    // h: [q.size(), n_embd] = embedding rows of q's tokens.
    Tensor embed(const BatchLayout& lay, const RowSet& q);

    // One exact layer over the query rows q (h: [q.size(), n_embd], updated in place). Fresh K/V of the q rows are
    // written into c.k / c.v (which hold every row of the batch), and q attends to all keys of its sequence.
    // store: which of the context (pre-o_proj) and FFN output rows are also written into c.ctx / c.ffn.
    // measure: when non-null, the cosine between the new context and c.ctx (previous step) is measured per row.
    void layer_dense(int l, Tensor& h, const BatchLayout& lay, const RowSet& q, LayerCache& c, StoreOutputs store = {},
                     SaliencyOutcome* measure = nullptr, float tau = 0.f);

    // Final norm + LM head on rows idx of h (indices into h's rows): [idx.size(), n_vocab].
    Tensor logits(const Tensor& h, const std::vector<int32_t>& idx);

    // FLOPs a dense forward over the whole batch would take (plus n_logit_rows through the head).
    double dense_flops(const BatchLayout& lay, int64_t n_logit_rows) const;

    Backend&            backend() { return be_; }
    const ModelWeights& weights() const { return w_; }
    const ModelConfig&  config() const { return cfg_; }
    LayerAccount&       account(int l) { return acc_[size_t(l)]; }

    // Building blocks for the methods' own layers (engine/methods/): each op timed (ScopedOp) and its FLOPs counted
    // in the layer's account (l = -1: the LM head).
    // Temporaries (contents undefined until written): from the workspace when there is one.
    Tensor alloc(int64_t rows, int64_t cols) { return alloc_as(DType::F32, rows, cols); }
    Tensor alloc_cache(int64_t rows, int64_t cols) { return alloc_as(be_.cache_dtype(), rows, cols); }
    void   norm(int l, const TensorView& x, const TensorView& w, const TensorView& y);
    // The residual stream's updates: h += a, and h += src's rows idx (a layer cache's cached outputs, add_rows).
    void residual_add(int l, const TensorView& h, const TensorView& a);
    void residual_add_rows(int l, const TensorView& src, std::span<const int32_t> idx, const TensorView& h);
    void matmul(int l, OpClass op, const TensorView& x, const TensorView& w, const TensorView& b, const TensorView& y);
    // q, k, v projections (+ bias, RoPE at rows' positions) of x: [n, n_embd]; any output may be null.
    // k_to / v_to (optional): where k and v go (a row range of the cache) instead of temporaries.
    void qkv(int l, const TensorView& x, const RowSet& rows, Tensor* q, Tensor* k, Tensor* v,
             const TensorView& k_to = {}, const TensorView& v_to = {});
    // out = W_down (silu(W_gate x) * W_up x); x, out: [n, n_embd].
    void ffn(int l, const TensorView& x, const TensorView& out);
    // Exact attention of query rows (q: [rows.size(), q_dim]) against every key of their sequences in c.k / c.v.
    // keep_lse: when given and its lse cache is allocated, the rows' softmax log-sum-exp is stored there (the
    // statistics attention_cols reuses); a measurement that must not touch the caches passes nothing.
    void attention(int l, const TensorView& q, const RowSet& rows, const LayerCache& c, const BatchLayout& lay,
                   const TensorView& out, LayerCache* keep_lse = nullptr);
    // DyLLM's column-sparse update of rows' contexts from the salient keys' dV (Backend::attention_approx).
    void attention_approx(int l, const TensorView& q, const RowSet& rows, const LayerCache& c, const TensorView& dv,
                          const RowSet& salient, const BatchLayout& lay, const TensorView& c_old,
                          const TensorView& c_new);
    // The same, with the rows exact (indices into rows, ascending) served exactly against c.v instead, in the same
    // pass where the backend fuses them (Backend::attention_approx_exact), else by attention() on those rows after the
    // update: the same numbers either way. exact_rows: those rows as a RowSet.
    void attention_approx_exact(int l, const TensorView& q, const RowSet& rows, const LayerCache& c,
                                const TensorView& dv, const RowSet& salient, const BatchLayout& lay,
                                const TensorView& c_old, const TensorView& c_new, const std::vector<int32_t>& exact,
                                const RowSet& exact_rows);
    // The column-sparse update (Backend::attention_cols): scores of the salient keys only, against each row's
    // log-sum-exp in c.lse. Incremental when k_old / v_old (the salient keys' rows before this step) are given: c.lse
    // is updated, and the indices (into rows) of the rows it could not serve are written to `fallback` (the caller
    // computes them exactly); the plain form leaves it empty.
    void attention_cols(int l, const TensorView& q, const RowSet& rows, LayerCache& c, const TensorView& dv,
                        const RowSet& salient, const BatchLayout& lay, const TensorView& c_old, const TensorView& c_new,
                        std::vector<int32_t>& fallback, const TensorView& k_old = {}, const TensorView& v_old = {});
    void cosine(int l, const TensorView& a, const TensorView& b, std::vector<float>& out);
    // The head-mean softmax probabilities of query rows (q: [rows.size(), q_dim]) over every key of their sequences
    // in c.k, as attention() weighs them, computed on the host (fp32 products, fp64 softmax) and written into `out`
    // row after row (row i: lay.seq_len(rows.seq[i]) values). Counted as 2 q_dim + n_head FLOPs per (row, key).
    // per_head: each head's probabilities instead of their mean (row i: n_head runs of lay.seq_len(rows.seq[i])
    // values, head after head; Elastic-Cache's drift test).
    void attention_probs(int l, const TensorView& q, const RowSet& rows, const LayerCache& c, const BatchLayout& lay,
                         std::vector<float>& out, bool per_head = false);
    // Exact attention of query rows against only the keys `keys` names of their sequences (their K/V rows gathered
    // from c.k / c.v, then attention() over the gathered rows). Counted as 4 q_dim FLOPs per (row, key read).
    void attention_keys(int l, const TensorView& q, const RowSet& rows, const LayerCache& c, const KeySubset& keys,
                        const TensorView& out);
    // A method's own host arithmetic (d2Cache's rollout), timed and counted like the ops above.
    template <class Fn>
    void host_op(int l, OpClass op, double flops, int32_t rows, Fn&& fn) {
        {
            ScopedOp s(sink_, step_, l, op, flops, 0, rows);
            fn();
        }
        if (l >= 0) acc_[size_t(l)].flops += flops;
    }

    // Composite steps the cached methods share (engine/methods/), made of the ops above and accounted through them.
    // h's rows `rows` (indices into h), gathered and normed with w: [rows.size(), n_embd].
    Tensor norm_rows(int l, const Tensor& h, const TensorView& w, const std::vector<int32_t>& rows);
    // Recomputes Q/K/V, attention and o_proj for `rows` (x: their normed inputs): fresh K (and V when with_v; the
    // cached V is read otherwise) written into c.k / c.v, the o_proj output into c.attn_out. Counted as query, exact
    // attention rows in the layer's account (kv_rows is the caller's: it knows which of K and V it refreshed).
    void recompute_attention(int l, const RowSet& rows, const Tensor& x, LayerCache& c, const BatchLayout& lay,
                             bool with_v);
    // h's rows `rows` (packed row indices, h holding every row of the batch) += the cache's same rows.
    void add_cached(int l, const Tensor& cache, const RowSet& rows, Tensor& h);
    void gather(int l, const TensorView& src, const std::vector<int32_t>& idx, const TensorView& dst);
    void scatter(int l, const TensorView& src, const std::vector<int32_t>& idx, const TensorView& dst);

private:
    Tensor alloc_as(DType t, int64_t rows, int64_t cols) {
        return ws_ ? ws_->alloc(t, rows, cols) : be_.alloc(t, rows, cols);
    }

    const ModelConfig&        cfg_;
    const ModelWeights&       w_;
    Backend&                  be_;
    EventSink*                sink_;
    int32_t                   step_ = 0;
    std::vector<LayerAccount> acc_;
    double                    head_flops_ = 0;
    Workspace*                ws_         = nullptr;
    std::vector<int32_t>      ids_, cu_sal_;     // per-call index scratch, kept between steps
    std::vector<float>        lse_host_;         // attention_cols' incremental form: the updated log-sum-exp, read back
    std::vector<float>        q_host_, k_host_;  // attention_probs: the query rows and the keys, read back
    std::vector<double>       w_host_;           // attention_probs: one head's weights
};

}  // namespace dyllm
