// Sparse-dLLM (arXiv 2508.02558, "Sparse-dLLM: Accelerating Diffusion LLMs with Dynamic Cache Eviction", after its
// authors' code, OpenMOSS/Sparse-dLLM): dynamic eviction of the cached keys outside the current block.
//
// Per block (engine/README.md "§s Sparse-dLLM"), as the authors' generate loops run it:
//  - step 0 of the block (`sdllm-full`): a dense forward; nothing is kept;
//  - step 1 (`sdllm-evict`): a dense forward that also ranks, per layer, the keys outside the block by the attention
//    the block's mean query pays them: importance_j = mean over query heads h of q̄_h · k_j (q̄_h the mean over the
//    block's rows of their query after RoPE, k_j the key after RoPE of head h's KV head; no 1/sqrt(D) scale), then a
//    max-pooling over positions (window sparse_kernel_size, stride 1, centred); the int(n · sparse_keep_ratio) best of
//    the n keys outside the block are retained, their K/V as this step computed them (the delayed update);
//  - steps 2.. (`sdllm-cached`): only the block's rows are computed, attending to the retained keys and the block's
//    own fresh keys; the retained keys stay as step 1 left them for the rest of the block.
// The ranking runs on the host (fp32 values, sums in fp64), ties at the retention boundary broken as the authors'
// torch.topk does on a CPU (std::nth_element over (score, position) pairs in position order, compared by score; a
// partial sort when k · 64 <= n), so the same keys are retained for the same scores.
//
// Where the engine's layout makes it differ from the authors' code:
//  - The K/V cache holds every row (K after RoPE, as everywhere here); the retained keys are gathered from it for each
//    cached step's attention (Forward::attention_keys), so the memory the authors' eviction frees is not freed here:
//    the attention reads, and its FLOPs, are the method's saving.
//  - Dream: the authors' step 0 commits the block's first token unconditionally and their later steps follow the
//    linspace schedule; this engine's sampler decodes as for every method, so while the block's first position is
//    masked its logits row (the row before the block, engine/README.md §d) joins the cached steps' queries, and its
//    fresh K/V replace the cached ones.
//  - A batch moves in lock-step: a step is dense when any sequence is at step 0 or 1 of its block (then a sequence in
//    its cached phase is computed densely too, its retained keys kept, their K/V refreshed).
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "engine/errors.h"
#include "engine/methods/method.h"

namespace dyllm {

namespace {

class SparseDllmMethod final : public DecodingMethod {
public:
    using DecodingMethod::DecodingMethod;

    CacheNeeds caches() const override { return {.ctx = p_.measure_cosine}; }

    // Each sequence's block and its block-local step i (0-based) are kept by its stable id (step_kind is called once
    // per step, before the method's other calls).
    StepKind step_kind(const StepInput& in) const override {
        bool any_full = false, any_evict = false;
        for (const SeqProgress& s : in.seqs) {
            SeqState&     st  = state(s.id);
            const int32_t blk = std::min(s.unmasked, s.gen_length - 1) / p_.block_length;
            if (blk != st.block) {
                st.block       = blk;
                st.block_start = in.step;
            }
            const int32_t i = in.step - st.block_start;
            any_full        = any_full || i == 0;
            any_evict       = any_evict || i == 1;
        }
        if (any_evict) return StepKind::SdllmEvict;
        return any_full ? StepKind::SdllmFull : StepKind::SdllmCached;
    }

    // Cached steps query the current block (and, for Dream, the row before it while the block's first position is
    // masked: its shifted logits).
    void query_rows(const StepInput& in, StepKind kind, RowSet& q) const override {
        if (kind != StepKind::SdllmCached) return all_rows(*in.lay, q);
        q.clear();
        for (int b = 0; b < in.lay->n_seq(); ++b) {
            const auto [first, end] = block_queries(in.seqs[size_t(b)]);
            for (int32_t a = first; a < end; ++a) q.push(in.lay->cu[size_t(b)] + a, b, a);
        }
    }

    Tensor run_layers(Forward& fwd, const StepInput& in, StepKind kind, const RowSet& q,
                      std::vector<LayerCache>& caches, const SaliencyReport& report) override {
        const BatchLayout& lay = *in.lay;
        if (kind != StepKind::SdllmCached) reserve(lay);  // the first cached step then allocates nothing
        if (kind == StepKind::SdllmCached) retained_keys(in);
        const bool ranks = kind == StepKind::SdllmEvict;
        Tensor     h     = fwd.embed(lay, q);
        for (int l = 0; l < cfg_.n_layer; ++l) {
            LayerCache&     c = caches[size_t(l)];
            const bool      m = measuring(in) && c.ctx.view().data;
            SaliencyOutcome o;
            Tensor          Q;
            StoreOutputs    store;
            if (ranks) store.queries = &Q;
            if (kind == StepKind::SdllmCached) store.keys = &keys_[size_t(l)];
            fwd.layer_dense(l, h, lay, q, c, store, m ? &o : nullptr, in.tau);
            if (m) report(l, o);
            if (ranks)
                for (int b = 0; b < lay.n_seq(); ++b) {
                    const SeqProgress& s = in.seqs[size_t(b)];
                    if (in.step - state(s.id).block_start == 1) rank(fwd, l, Q, c, lay, b, s);
                }
        }
        return h;
    }

private:
    struct SeqState {
        int32_t                           block = -1, block_start = 0;  // current block, the step it began at
        std::vector<std::vector<int32_t>> kept;                         // per layer: retained positions, ascending
    };

    SeqState& state(int32_t id) const {
        if (seq_.size() <= size_t(id)) seq_.resize(size_t(id) + 1);
        return seq_[size_t(id)];
    }

    // The block of s as positions in the sequence: [start, start + len).
    std::pair<int32_t, int32_t> block(const SeqProgress& s) const {
        const int32_t r0 = std::min(s.unmasked, s.gen_length - 1) / p_.block_length * p_.block_length;
        return {s.prompt_len + r0, std::min(p_.block_length, s.gen_length - r0)};
    }

    // A cached step's query rows of s as positions [first, end).
    std::pair<int32_t, int32_t> block_queries(const SeqProgress& s) const {
        const auto [start, len] = block(s);
        int32_t    first        = start;
        const bool first_masked = std::binary_search(s.masked.begin(), s.masked.end(), start - s.prompt_len);
        if (cfg_.family == Family::Dream && first > 0 && first_masked) --first;
        return {first, start + len};
    }

    void reserve(const BatchLayout& lay) {
        keys_.resize(size_t(cfg_.n_layer));
        for (KeySubset& k : keys_) {
            k.rows.reserve(size_t(lay.n_rows()));
            k.cu.reserve(size_t(lay.n_seq()) + 1);
        }
    }

    // Per layer, the keys a cached step reads: each sequence's retained positions and its query rows, ascending.
    void retained_keys(const StepInput& in) {
        const BatchLayout& lay = *in.lay;
        for (int l = 0; l < cfg_.n_layer; ++l) {
            KeySubset& k = keys_[size_t(l)];
            k.rows.clear();
            k.cu.assign(1, 0);
            for (int b = 0; b < lay.n_seq(); ++b) {
                const SeqProgress& s  = in.seqs[size_t(b)];
                const SeqState&    st = state(s.id);
                DYLLM_ASSERT(st.kept.size() == size_t(cfg_.n_layer),
                             "sparse-dllm: a cached step before its block's ranking");
                const std::vector<int32_t>& kept = st.kept[size_t(l)];
                const auto [first, end]          = block_queries(s);
                const int32_t cu                 = lay.cu[size_t(b)];
                size_t        j                  = 0;
                for (; j < kept.size() && kept[j] < first; ++j) k.rows.push_back(cu + kept[j]);
                for (int32_t a = first; a < end; ++a) k.rows.push_back(cu + a);
                for (; j < kept.size(); ++j)
                    if (kept[j] >= end) k.rows.push_back(cu + kept[j]);
                k.cu.push_back(int32_t(k.rows.size()));
            }
        }
    }

    // The authors' filter_cache for sequence b at layer l: the keys outside the block ranked by the block's mean
    // query, max-pooled, the top share retained (see the header comment). Q: every row's query projection.
    void rank(Forward& fwd, int l, const Tensor& Q, const LayerCache& c, const BatchLayout& lay, int b,
              const SeqProgress& s) {
        const int     H = cfg_.n_head, D = cfg_.head_dim, group = cfg_.n_head / cfg_.n_kv_head;
        const int64_t qd = cfg_.q_dim(), kvd = cfg_.kv_dim();
        const int32_t T = lay.seq_len(b), cu = lay.cu[size_t(b)];
        // Plain locals, not a structured binding: the lambda below captures them (clang 14 cannot capture bindings).
        const std::pair<int32_t, int32_t> range = block(s);
        const int32_t                     start = range.first, len = range.second;
        const int32_t                     n  = T - len;
        const double                      fl = double(len) * double(qd) + double(n) * (2.0 * double(qd) + double(H));
        fwd.host_op(l, OpClass::Other, fl, len, [&] {
            Backend&         be = fwd.backend();
            const TensorView qv = Q.view(), kc = c.k.view();
            q_host_.resize(size_t(len) * size_t(qd));
            k_host_.resize(size_t(T) * size_t(kvd));
            be.download(TensorView::matrix(qv.row<char>(cu + start), qv.dtype, qv.device, len, qd), q_host_.data());
            const TensorView ks = TensorView::matrix(kc.row<char>(cu), kc.dtype, kc.device, T, kvd);
            if (ks.dtype == DType::F32) {
                be.download(ks, k_host_.data());
            } else {
                Tensor k32 = fwd.alloc(T, kvd);
                be.copy(ks, k32);
                be.download(k32, k_host_.data());
            }
            // The block's mean query per head (fp32 values, summed in fp64).
            mean_q_.resize(size_t(qd));
            for (int64_t e = 0; e < qd; ++e) {
                double sum = 0;
                for (int32_t r = 0; r < len; ++r) sum += double(q_host_[size_t(r * qd + e)]);
                mean_q_[size_t(e)] = float(sum / double(len));
            }
            // Importance of each key outside the block: the head mean of the per-head scores.
            imp_.resize(size_t(n));
            for (int32_t j = 0; j < n; ++j) {
                const int32_t t   = j < start ? j : j + len;
                double        sum = 0;
                for (int h = 0; h < H; ++h) {
                    const float* qh  = mean_q_.data() + int64_t(h) * D;
                    const float* kj  = k_host_.data() + int64_t(t) * kvd + int64_t(h / group) * D;
                    double       dot = 0;
                    for (int e = 0; e < D; ++e) dot += double(qh[e]) * double(kj[e]);
                    sum += double(float(dot));
                }
                imp_[size_t(j)] = float(sum / H);
            }
            // Max-pooling over positions (padding counts as -inf), then the top share.
            const int32_t half = p_.sparse_kernel_size / 2;
            ranked_.resize(size_t(n));
            for (int32_t j = 0; j < n; ++j) {
                float best = imp_[size_t(j)];
                for (int32_t u = std::max(0, j - half); u <= std::min(n - 1, j + half); ++u)
                    best = std::max(best, imp_[size_t(u)]);
                ranked_[size_t(j)] = {double(best), j};
            }
            // int(n * keep_ratio) with the ratio as the decimal it was given (float rounding undone to 6 places).
            const double  ratio    = std::round(double(p_.sparse_keep_ratio) * 1e6) / 1e6;
            const int32_t keep     = std::min(n, int32_t(double(n) * ratio));
            const auto    by_score = [](const std::pair<double, int32_t>& x, const std::pair<double, int32_t>& y) {
                return x.first > y.first;
            };
            if (keep > 0 && int64_t(keep) * 64 <= n)
                std::partial_sort(ranked_.begin(), ranked_.begin() + keep, ranked_.end(), by_score);
            else if (keep > 0)
                std::nth_element(ranked_.begin(), ranked_.begin() + (keep - 1), ranked_.end(), by_score);
            SeqState& st = state(s.id);
            st.kept.resize(size_t(cfg_.n_layer));
            std::vector<int32_t>& kept = st.kept[size_t(l)];
            kept.clear();
            for (int32_t i = 0; i < keep; ++i) {
                const int32_t j = ranked_[size_t(i)].second;
                kept.push_back(j < start ? j : j + len);
            }
            std::sort(kept.begin(), kept.end());
        });
    }

    mutable std::vector<SeqState>           seq_;   // by sequence id
    std::vector<KeySubset>                  keys_;  // per layer: the keys a cached step reads
    std::vector<float>                      q_host_, k_host_, mean_q_, imp_;
    std::vector<std::pair<double, int32_t>> ranked_;
};

}  // namespace

std::unique_ptr<DecodingMethod> make_sparse_dllm_method(const ModelConfig& cfg, const DiffusionParams& p) {
    return std::make_unique<SparseDllmMethod>(cfg, p);
}

}  // namespace dyllm
