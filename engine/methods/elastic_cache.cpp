// Elastic-Cache (arXiv 2510.14973, "Attention Is All You Need for KV Cache in Diffusion LLMs"), after its authors'
// code (llada/generate.py generate_with_elastic_cache with llada/model/modeling_llada.py, and
// dream/model/generation_utils_elastic.py with dream/model/modeling_dream.py): when to refresh the caches is decided
// by an attention drift test on the most-attended tokens, from which layer by where that test fails.
//
// Step 1 (`elastic-full`) computes every row of every layer. Every later step (`elastic-cached`) queries, per
// sequence: the tracked tokens (at each layer of the step before, the decoded position the window's masked rows
// attended most, summed over heads and rows: elastic_track per layer, the union over layers), the positions the step
// before decoded, and the window (the first elastic_window masked positions; for Dream the row before each, whose
// logits score it); with elastic_block_caching off, every masked position's row. Every other row's K/V, queries and
// layer inputs come from the caches. At each layer the tracked tokens' attention over every key is compared with the
// one the step before left (their cached queries against the keys before this layer's update): per (tracked token,
// key) the cosine over the heads of the two probability vectors, averaged; below elastic_gamma, every later layer
// recomputes every row of the sequence, the layer after the drifted one from its cached inputs (those rows' last
// computed hidden states) with the query rows' fresh ones written in. The window is also the sampler's candidates
// (candidate_window), as the authors decode from it.
//
// Where this differs from the authors' code (engine/README.md "§i Elastic-Cache"): a batch decides per sequence (their
// code runs one sequence); the probabilities of the drift test and of the tracking come from Forward::attention_probs
// (fp32 products, fp64 softmax) where theirs are fp32 throughout; elastic_gamma above 1 makes every step dense (theirs
// can refresh from layer 1 at the earliest, so never reproduces the original decode); elastic_window 0 takes the
// engine's blocks instead of a sliding window; EOS ends a sequence by the engine's rule (theirs stops decoding past the
// first EOS and ends when every position before it is decoded); and the sampler is this engine's (Dream candidates by
// negative entropy, theirs by confidence; [MASK] never predicted, theirs may be).
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/methods/method.h"

namespace dyllm {

namespace {

class ElasticCacheMethod final : public DecodingMethod {
public:
    using DecodingMethod::DecodingMethod;

    CacheNeeds caches() const override { return {.q = true, .hidden = true}; }

    StepKind step_kind(const StepInput& in) const override {
        return in.step == 1 || p_.elastic_gamma > 1.f ? StepKind::ElasticFull : StepKind::ElasticCached;
    }

    int32_t candidate_window() const override { return p_.elastic_window; }

    void query_rows(const StepInput& in, StepKind kind, RowSet& q) const override {
        if (kind == StepKind::ElasticFull) return all_rows(*in.lay, q);
        q.clear();
        const BatchLayout& lay = *in.lay;
        for (int b = 0; b < lay.n_seq(); ++b) {
            const SeqProgress& s = in.seqs[size_t(b)];
            const int32_t      T = lay.seq_len(b);
            want_.assign(size_t(T), 0);
            for (int32_t t : state(s.id).tracked) want_[size_t(t)] = 1;
            for (int32_t r : s.last_unmasked) want_[size_t(s.prompt_len + r)] = 1;
            window_rows(s, lay.cu[size_t(b)], b, win_seq_);
            for (int32_t t : win_seq_.pos) want_[size_t(t)] = 1;
            for (int32_t t = 0; t < T; ++t)
                if (want_[size_t(t)]) q.push(lay.cu[size_t(b)] + t, b, t);
        }
    }

    Tensor run_layers(Forward& fwd, const StepInput& in, StepKind kind, const RowSet& q,
                      std::vector<LayerCache>& caches, const SaliencyReport&) override {
        const BatchLayout& lay  = *in.lay;
        const int          B    = lay.n_seq();
        const bool         full = kind == StepKind::ElasticFull;
        reserve(lay);
        // Per sequence, the first layer that recomputes every row (-1: all of them; n_layer: none yet).
        reset_.assign(size_t(B), full ? -1 : cfg_.n_layer);
        win_.clear();
        for (int b = 0; b < B; ++b) {
            window_rows(in.seqs[size_t(b)], lay.cu[size_t(b)], b, win_seq_);
            for (size_t i = 0; i < win_seq_.size(); ++i) win_.push(win_seq_.rows[i], b, win_seq_.pos[i]);
            state(in.seqs[size_t(b)].id).next.clear();
        }
        cur_     = q;
        Tensor h = fwd.embed(lay, q);
        for (int l = 0; l < cfg_.n_layer; ++l) {
            LayerCache& c = caches[size_t(l)];
            // Every computed row's input is cached; a sequence whose refresh starts here continues over all its rows,
            // the others' inputs read back from the cache.
            fwd.scatter(l, h, cur_.rows, c.hidden);
            bool grow = false;
            for (int b = 0; b < B; ++b) grow = grow || reset_[size_t(b)] == l;
            if (grow) {
                next_.clear();
                for (int b = 0; b < B; ++b) {
                    if (reset_[size_t(b)] <= l) {
                        for (int32_t t = 0; t < lay.seq_len(b); ++t) next_.push(lay.cu[size_t(b)] + t, b, t);
                        continue;
                    }
                    for (size_t i = 0; i < cur_.size(); ++i)
                        if (cur_.seq[i] == b) next_.push(cur_.rows[i], b, cur_.pos[i]);
                }
                cur_.rows.swap(next_.rows), cur_.seq.swap(next_.seq), cur_.pos.swap(next_.pos);
                Tensor g = fwd.alloc(int64_t(cur_.size()), cfg_.n_embd);
                fwd.gather(l, c.hidden, cur_.rows, g);
                h = std::move(g);
            }
            layer(fwd, in, l, h, c);
        }
        for (int b = 0; b < B; ++b) {
            SeqState& st = state(in.seqs[size_t(b)].id);
            std::sort(st.next.begin(), st.next.end());
            st.next.erase(std::unique(st.next.begin(), st.next.end()), st.next.end());
            st.tracked.swap(st.next);
        }
        if (cur_.size() == q.size()) return h;
        index_within(cur_, q, idx_);
        Tensor out = fwd.alloc(int64_t(q.size()), cfg_.n_embd);
        fwd.gather(-1, h, idx_, out);
        return out;
    }

private:
    struct SeqState {
        std::vector<int32_t> tracked;  // positions tracked this step (chosen by the step before), ascending
        std::vector<int32_t> next;     // the positions this step's layers choose
    };

    SeqState& state(int32_t id) const {
        if (seq_.size() <= size_t(id)) seq_.resize(size_t(id) + 1);
        return seq_[size_t(id)];
    }

    // Sized for the largest step of the run on its first, so that later steps allocate nothing.
    void reserve(const BatchLayout& lay) {
        const size_t n = size_t(lay.n_rows());
        cur_.reserve(n), next_.reserve(n), win_.reserve(n), win_seq_.reserve(n), track_.reserve(n);
        idx_.reserve(n), tidx_.reserve(n), widx_.reserve(n), want_.reserve(n), score_.reserve(n);
        int32_t t_max = 0;
        for (int b = 0; b < lay.n_seq(); ++b) t_max = std::max(t_max, lay.seq_len(b));
        const size_t n_track = std::min(n, size_t(cfg_.n_layer) * size_t(p_.elastic_track) * size_t(lay.n_seq()));
        past_.reserve(n_track * size_t(cfg_.n_head) * size_t(t_max));
        now_.reserve(n_track * size_t(cfg_.n_head) * size_t(t_max));
        win_probs_.reserve(n * size_t(t_max));
    }

    // The window's rows of sequence b (first packed row cu): the first elastic_window masked positions (every masked
    // position of the current block when 0), or every masked position without block caching; for Dream the row
    // before each (its shifted logits).
    void window_rows(const SeqProgress& s, int32_t cu, int b, RowSet& out) const {
        out.clear();
        const bool    dream = cfg_.family == Family::Dream;
        const int32_t W     = p_.elastic_window;
        int32_t       hi = s.gen_length, n_max = int32_t(s.masked.size());
        if (p_.elastic_block_caching && W == 0)
            hi = std::min(s.gen_length, (s.unmasked / p_.block_length + 1) * p_.block_length);  // earlier: complete
        else if (p_.elastic_block_caching)
            n_max = W;
        int32_t n = 0;
        for (int32_t r : s.masked) {
            if (n >= n_max || r >= hi) break;
            const int32_t t = std::max(0, s.prompt_len + r - (dream ? 1 : 0));
            out.push(cu + t, b, t);
            ++n;
        }
    }

    // One exact layer over cur_'s rows (h: their hidden states), with the drift test for the sequences still reading
    // caches and the choice of the next step's tracked tokens.
    void layer(Forward& fwd, const StepInput& in, int l, Tensor& h, LayerCache& c) {
        const BatchLayout&  lay = *in.lay;
        const LayerWeights& L   = fwd.weights().layers[size_t(l)];
        const int64_t       n   = int64_t(cur_.size());
        LayerAccount&       A   = fwd.account(l);
        A.query_rows += int32_t(n);
        A.kv_rows += int32_t(n);
        A.attn_exact_rows += int32_t(n);
        A.ffn_rows += int32_t(n);

        // The tracked rows of the sequences whose layer l reads caches: their attention before this layer's update.
        track_.clear();
        for (size_t i = 0; i < cur_.size(); ++i) {
            const int b = cur_.seq[i];
            if (l >= reset_[size_t(b)]) continue;
            const std::vector<int32_t>& tr = state(in.seqs[size_t(b)].id).tracked;
            if (std::binary_search(tr.begin(), tr.end(), cur_.pos[i])) track_.push(cur_.rows[i], b, cur_.pos[i]);
        }
        if (!track_.empty()) {
            Tensor q_old = fwd.alloc(int64_t(track_.size()), cfg_.q_dim());
            fwd.gather(l, c.q, track_.rows, q_old);
            fwd.attention_probs(l, q_old, track_, c, lay, past_, true);
        }

        Tensor x = fwd.alloc(n, cfg_.n_embd);
        fwd.norm(l, h, L.attn_norm, x);
        Tensor Q, K, V;
        fwd.qkv(l, x, cur_, &Q, &K, &V);
        fwd.scatter(l, K, cur_.rows, c.k);
        fwd.scatter(l, V, cur_.rows, c.v);
        fwd.scatter(l, Q, cur_.rows, c.q);
        Tensor ctx = fwd.alloc(n, cfg_.q_dim());
        fwd.attention(l, Q, cur_, c, lay, ctx);

        if (!track_.empty()) {
            index_within(cur_, track_, tidx_);
            Tensor q_new = fwd.alloc(int64_t(track_.size()), cfg_.q_dim());
            fwd.gather(l, Q, tidx_, q_new);
            fwd.attention_probs(l, q_new, track_, c, lay, now_, true);
            drift_test(fwd, l, lay);
        }
        index_within(cur_, win_, widx_);
        if (!win_.empty()) {
            Tensor q_win = fwd.alloc(int64_t(win_.size()), cfg_.q_dim());
            fwd.gather(l, Q, widx_, q_win);
            fwd.attention_probs(l, q_win, win_, c, lay, win_probs_);
        }
        choose_tracked(in, lay);

        Tensor a = fwd.alloc(n, cfg_.n_embd);
        fwd.matmul(l, OpClass::OProj, ctx, L.wo, TensorView{}, a);
        fwd.residual_add(l, h, a);
        Tensor x2 = fwd.alloc(n, cfg_.n_embd);
        fwd.norm(l, h, L.ffn_norm, x2);
        Tensor m = fwd.alloc(n, cfg_.n_embd);
        fwd.ffn(l, x2, m);
        fwd.residual_add(l, h, m);
    }

    // Per sequence, the mean over (tracked token, key) of the cosine over heads between the attention probabilities
    // before (past_) and after (now_) this layer's update, as torch's cosine_similarity along the head axis (each
    // norm clamped at eps 1e-8 on its own: a key every head ignores, its probabilities ~1e-5, still has cosine ~1);
    // below elastic_gamma, every row is recomputed from layer l + 1 on.
    void drift_test(Forward& fwd, int l, const BatchLayout& lay) {
        const int H  = cfg_.n_head;
        double    fl = 0;
        for (int32_t b : track_.seq) fl += 6.0 * H * double(lay.seq_len(b));
        fwd.host_op(l, OpClass::Other, fl, int32_t(track_.size()), [&] {
            size_t o = 0;
            for (size_t i = 0; i < track_.size();) {
                const int     b   = track_.seq[i];
                const int64_t T   = lay.seq_len(b);
                double        sum = 0;
                int64_t       cnt = 0;
                for (; i < track_.size() && track_.seq[i] == b; ++i, o += size_t(H * T))
                    for (int64_t j = 0; j < T; ++j) {
                        double w12 = 0, w1 = 0, w2 = 0;
                        for (int hh = 0; hh < H; ++hh) {
                            const double x = past_[o + size_t(hh * T + j)], y = now_[o + size_t(hh * T + j)];
                            w12 += x * y, w1 += x * x, w2 += y * y;
                        }
                        sum += w12 / (std::max(std::sqrt(w1), 1e-8) * std::max(std::sqrt(w2), 1e-8));
                        ++cnt;
                    }
                if (sum / double(cnt) < double(p_.elastic_gamma)) reset_[size_t(b)] = l + 1;
            }
        });
    }

    // Per sequence, the elastic_track keys its window's rows attend most (head-mean probabilities summed over those
    // rows), masked positions excluded (their weight set to 0, as the authors' code does), higher weight then lower
    // position first: the next step's tracked tokens (the union over the layers).
    void choose_tracked(const StepInput& in, const BatchLayout& lay) {
        size_t o = 0;
        for (size_t i = 0; i < win_.size();) {
            const int             b    = win_.seq[i];
            const SeqProgress&    s    = in.seqs[size_t(b)];
            const int32_t         T    = lay.seq_len(b);
            std::vector<int32_t>& next = state(s.id).next;
            score_.assign(size_t(T), 0.0);
            for (; i < win_.size() && win_.seq[i] == b; ++i, o += size_t(T))
                for (int32_t j = 0; j < T; ++j) score_[size_t(j)] += double(win_probs_[o + size_t(j)]);
            for (int32_t r : s.masked) score_[size_t(s.prompt_len + r)] = 0.0;
            const int32_t k = std::min(p_.elastic_track, T);
            for (int32_t pick = 0; pick < k; ++pick) {
                int32_t best = -1;
                for (int32_t j = 0; j < T; ++j)
                    if (score_[size_t(j)] >= 0 && (best < 0 || score_[size_t(j)] > score_[size_t(best)])) best = j;
                if (best < 0) break;
                next.push_back(best);
                score_[size_t(best)] = -1.0;
            }
        }
    }

    mutable std::vector<SeqState> seq_;  // by sequence id
    mutable std::vector<uint8_t>  want_;
    mutable RowSet                win_seq_;
    RowSet                        cur_, next_, win_, track_;
    std::vector<int32_t>          reset_, idx_, tidx_, widx_;
    std::vector<float>            past_, now_, win_probs_;
    std::vector<double>           score_;
};

}  // namespace

std::unique_ptr<DecodingMethod> make_elastic_cache_method(const ModelConfig& cfg, const DiffusionParams& p) {
    return std::make_unique<ElasticCacheMethod>(cfg, p);
}

}  // namespace dyllm
