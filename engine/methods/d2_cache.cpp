// d2Cache (arXiv 2509.23094, "d2Cache: Accelerating Diffusion-Based LLMs via Dual Adaptive Caching"): step 1 is a
// dense forward; every later step recomputes only the rows a two-part selection chose at the end of the step before
// and reads the other rows' K/V from the cache.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "engine/methods/method.h"

namespace dyllm {

namespace {

// The selection for step s + 1, from what step s left (engine/README.md "§h d2Cache"):
//  - masked rows: the d2_k masked positions with the highest certainty prior x certainty density (a Gaussian of width
//    d2_sigma over the decoded positions, the prompt counting as decoded), searched from step s's block to the end of
//    the block holding the d2_k-th masked position (in the authors' code: to a multiple of the block's masked count,
//    see select()), step s's block first; for Dream the row before each (its shifted logits);
//  - the positions step s decoded (their tokens changed);
//  - of the remaining rows, the most important by step s's attention rollout (per layer, the head-mean attention of
//    the queried rows plus the residual, rows normalised, composed over the layers; a row's importance is its column
//    sum) until their share of the remaining importance would pass d2_rollout_p, at least one; 1 takes every row;
//  - with d2_inflate = w > 0, every row between two chosen rows at most w apart.
// The certainty prior is each position's confidence at step 1 (the authors' code: its update writes into a copy) or,
// with d2_update_prior, the latest confidence of each recomputed masked position (the paper). A masked position of the
// block whose row is not recomputed stays a candidate scored from all-zero logits (the authors' code: its filter
// writes into a copy) or, with d2_queried_only, is no candidate that step (the paper).
class D2CacheMethod final : public DecodingMethod {
public:
    using DecodingMethod::DecodingMethod;

    CacheNeeds caches() const override { return {.ctx = p_.measure_cosine}; }

    StepKind step_kind(const StepInput& in) const override {
        return in.step == 1 ? StepKind::D2Full : StepKind::D2Cached;
    }

    UnqueriedCandidates unqueried_candidates() const override {
        return p_.d2_queried_only ? UnqueriedCandidates::Dropped : UnqueriedCandidates::ZeroLogits;
    }

    void query_rows(const StepInput& in, StepKind kind, RowSet& q) const override {
        if (kind == StepKind::D2Full) return all_rows(*in.lay, q);
        q.clear();
        for (int b = 0; b < in.lay->n_seq(); ++b) select(in.seqs[size_t(b)], in.lay->cu[size_t(b)], b, q);
    }

    Tensor run_layers(Forward& fwd, const StepInput& in, StepKind, const RowSet& q, std::vector<LayerCache>& caches,
                      const SaliencyReport& report) override {
        const BatchLayout& lay = *in.lay;
        start_rollout(lay, q);
        Tensor h = fwd.embed(lay, q);
        for (int l = 0; l < cfg_.n_layer; ++l) {
            LayerCache&     c = caches[size_t(l)];
            const bool      m = measuring(in) && c.ctx.view().data;
            SaliencyOutcome o;
            fwd.layer_dense(l, h, lay, q, c, {.attn_probs = &probs_}, m ? &o : nullptr, in.tau);
            if (m) report(l, o);
            fwd.host_op(l, OpClass::Other, rollout_flops(lay), int32_t(q.size()), [&] { compose_rollout(lay); });
        }
        keep_importance(in, lay);
        update_prior(fwd, in, q, h);
        return h;
    }

private:
    // What one sequence (by stable id) carries from step to step.
    struct SeqState {
        std::vector<float> prior;       // [R] certainty prior (a confidence per response position)
        std::vector<float> importance;  // [P + R] the last step's rollout importance per row
    };

    SeqState& state(int32_t id) const {
        if (seq_.size() <= size_t(id)) seq_.resize(size_t(id) + 1);
        return seq_[size_t(id)];
    }

    // The authors' certainty_density: a Gaussian of width sigma over the decoded flags, the R positions left of the
    // response counting as decoded and the R right of it as the last position is, normalised by the kernel's whole
    // sum over [-3R, 3R) (their FFT's; computed here directly, in fp64).
    void certainty_density(const std::vector<uint8_t>& decoded, std::vector<double>& out) const {
        const int64_t R = int64_t(decoded.size());
        const double  s = double(p_.d2_sigma);
        gauss_.resize(size_t(3 * R + 1));
        for (int64_t x = 0; x <= 3 * R; ++x) gauss_[size_t(x)] = std::exp(-double(x * x) / (2 * s * s));
        const auto g = [&](int64_t x) { return gauss_[size_t(std::abs(x))]; };
        double     z = 0;
        for (int64_t x = -3 * R; x < 3 * R; ++x) z += g(x);
        const bool right = R > 0 && decoded[size_t(R - 1)];
        out.assign(size_t(R), 0.0);
        for (int64_t r = 0; r < R; ++r) {
            double sum = 0;
            for (int64_t j = 0; j < R; ++j) {
                sum += g(R + r - j);                      // the left pad, all decoded
                if (decoded[size_t(j)]) sum += g(r - j);  // the response
                if (right) sum += g(r - R - j);           // the right pad
            }
            out[size_t(r)] = sum / z;
        }
    }

    // The rows sequence b (first packed row cu) queries this step, pushed onto q.
    void select(const SeqProgress& s, int32_t cu, int b, RowSet& q) const {
        const int32_t P = s.prompt_len, R = s.gen_length, T = P + R, Bk = p_.block_length, k = p_.d2_k;
        const bool    dream = cfg_.family == Family::Dream;
        SeqState&     st    = state(s.id);
        order_.reserve(size_t(T));  // sized once: later steps allocate nothing
        rest_.reserve(size_t(T));
        masked_.assign(size_t(R), 0);
        for (int32_t r : s.masked) masked_[size_t(r)] = 1;

        // The block the previous step decoded in, and the search window: from its start to the k-th masked position
        // (the last position when there are fewer) rounded up to a multiple of the window's unit. With
        // d2_block_window the unit is the block length; in the authors' code it is the number of the block's
        // positions that were masked when the previous step began (their block mask, narrowed in place to those by
        // the step's check_can_generate).
        const int32_t before = s.unmasked - int32_t(s.last_unmasked.size());
        const int32_t start  = std::min(before, R - 1) / Bk * Bk;
        int32_t       kth = R - 1, n = 0;
        for (int32_t r = 0; r < R; ++r)
            if (masked_[size_t(r)] && ++n == k) {
                kth = r;
                break;
            }
        int32_t unit = Bk;
        if (!p_.d2_block_window) {
            unit = 0;
            for (int32_t r = start; r < std::min(R, start + Bk); ++r) unit += masked_[size_t(r)];
            for (int32_t r : s.last_unmasked) unit += r >= start && r < start + Bk;
            unit = std::max(unit, 1);
        }
        const int32_t end = std::min(R - 1, (kth / unit + 1) * unit - 1);

        decoded_.resize(size_t(R));
        for (int32_t r = 0; r < R; ++r) decoded_[size_t(r)] = !masked_[size_t(r)];
        certainty_density(decoded_, density_);
        score_.resize(size_t(R));
        double top = -INFINITY;
        for (int32_t r = 0; r < R; ++r)
            top = std::max(top, score_[size_t(r)] = st.prior[size_t(r)] * density_[size_t(r)]);
        for (int32_t r = start; r < std::min(R, start + Bk); ++r) score_[size_t(r)] += top;  // the block first
        order_.clear();
        for (int32_t r = start; r <= end; ++r)
            if (masked_[size_t(r)]) order_.push_back(r);
        const size_t n_sel = std::min(order_.size(), size_t(std::min(k, R)));
        std::partial_sort(order_.begin(), order_.begin() + ptrdiff_t(n_sel), order_.end(), [&](int32_t a, int32_t c) {
            return score_[size_t(a)] != score_[size_t(c)] ? score_[size_t(a)] > score_[size_t(c)] : a < c;
        });
        order_.resize(n_sel);
        if (p_.d2_queried_only) keep_a_candidate(s, masked_);

        want_.assign(size_t(T), 0);
        bool first_selected = false;
        for (int32_t r : order_) {
            if (!dream)
                want_[size_t(P + r)] = 1;
            else if (r > 0)
                want_[size_t(P + r - 1)] = 1;
            first_selected = first_selected || r == 0;
        }
        for (int32_t r : s.last_unmasked) want_[size_t(P + r)] = 1;
        rollout_pick(st.importance, want_);
        if (dream && P > 0) want_[size_t(P - 1)] = first_selected;  // the authors assign it, after the rollout's pick
        inflate(want_);
        if (p_.d2_rollout_p >= 1) std::fill(want_.begin(), want_.end(), uint8_t(1));  // every row: the original decode
        for (int32_t t = 0; t < T; ++t)
            if (want_[size_t(t)]) q.push(cu + t, b, t);
    }

    // d2_queried_only: when no chosen masked position is a candidate of the next step (its block), the best-scored
    // masked position of that block joins them, so that every step has one (the engine's guard: the authors' code
    // would score the block's positions from zero logits instead).
    void keep_a_candidate(const SeqProgress& s, const std::vector<uint8_t>& masked) const {
        const int32_t R = s.gen_length, Bk = p_.block_length, lo = std::min(s.unmasked, R - 1) / Bk * Bk;
        const int32_t hi = std::min(R, lo + Bk);
        for (int32_t r : order_)
            if (r >= lo && r < hi) return;
        int32_t best = -1;
        for (int32_t r = lo; r < hi; ++r)
            if (masked[size_t(r)] && (best < 0 || score_[size_t(r)] > score_[size_t(best)])) best = r;
        if (best >= 0) order_.push_back(best);
    }

    // The authors' nucleus_select over the rows not yet chosen: by importance (normalised over those rows), highest
    // first (lower row on ties), while the running share stays within d2_rollout_p, and at least the first.
    void rollout_pick(const std::vector<float>& imp, std::vector<uint8_t>& want) const {
        const double p = double(p_.d2_rollout_p);
        rest_.clear();
        double total = 0;
        for (size_t t = 0; t < want.size(); ++t)
            if (!want[t]) rest_.push_back(int32_t(t)), total += double(imp[t]);
        if (p >= 1) {
            for (int32_t t : rest_) want[size_t(t)] = 1;
            return;
        }
        std::sort(rest_.begin(), rest_.end(), [&](int32_t a, int32_t c) {
            return imp[size_t(a)] != imp[size_t(c)] ? imp[size_t(a)] > imp[size_t(c)] : a < c;
        });
        double cum = 0;
        for (size_t i = 0; i < rest_.size(); ++i) {
            cum += double(imp[size_t(rest_[i])]) / (total + 1e-9);
            if (cum > p && i > 0) break;
            want[size_t(rest_[i])] = 1;
        }
    }

    // d2_inflate = w: the rows between two chosen rows at most w apart are chosen too.
    void inflate(std::vector<uint8_t>& want) const {
        const int32_t w = p_.d2_inflate;
        if (w <= 0) return;
        int32_t prev = -1;
        for (int32_t t = 0; t < int32_t(want.size()); ++t) {
            if (!want[size_t(t)]) continue;
            if (prev >= 0 && t - prev <= w) std::fill(want.begin() + prev + 1, want.begin() + t, uint8_t(1));
            prev = t;
        }
    }

    // The rollout of each query row starts as its own unit row; rows not queried stay unit rows all step (the
    // authors' identity rows), so only the query rows' are kept: per sequence [n_q, T], sequence after sequence.
    void start_rollout(const BatchLayout& lay, const RowSet& q) {
        q.seq_offsets(lay.n_seq(), q_off_);
        r_off_.assign(size_t(lay.n_seq()) + 1, 0);
        for (int b = 0; b < lay.n_seq(); ++b)
            r_off_[size_t(b) + 1] = r_off_[size_t(b)] + (q_off_[size_t(b) + 1] - q_off_[size_t(b)]) * lay.seq_len(b);
        rollout_.assign(size_t(r_off_.back()), 0.f);
        local_.assign(size_t(lay.n_rows()), -1);
        for (size_t i = 0; i < q.size(); ++i) {
            const int b = q.seq[i], T = lay.seq_len(b), li = int(i) - q_off_[size_t(b)];
            rollout_[size_t(r_off_[size_t(b)] + li * T + q.pos[i])] = 1.f;
            local_[size_t(q.rows[i])]                               = li;
        }
    }

    double rollout_flops(const BatchLayout& lay) const {
        double f = 0;
        for (int b = 0; b < lay.n_seq(); ++b) {
            const double nq = q_off_[size_t(b) + 1] - q_off_[size_t(b)];
            f += nq * lay.seq_len(b) * (2 * nq + 4);
        }
        return f;
    }

    // One layer of the rollout: R <- norm(A + I) R, A the layer's head-mean attention (probs_, rows of the query rows
    // over their sequence's keys, laid out as rollout_), I the residual, each row divided by its sum.
    void compose_rollout(const BatchLayout& lay) {
        next_.assign(rollout_.size(), 0.f);
        for (int b = 0; b < lay.n_seq(); ++b) {
            const int32_t T = lay.seq_len(b), nq = q_off_[size_t(b) + 1] - q_off_[size_t(b)], cu = lay.cu[size_t(b)];
            for (int32_t i = 0; i < nq; ++i) {
                const float* a   = probs_.data() + r_off_[size_t(b)] + size_t(i) * size_t(T);
                const float* old = rollout_.data() + r_off_[size_t(b)] + size_t(i) * size_t(T);
                float*       out = next_.data() + r_off_[size_t(b)] + size_t(i) * size_t(T);
                float        sum = 1.f;
                for (int32_t j = 0; j < T; ++j) {
                    sum += a[j];
                    const int32_t lj = local_[size_t(cu + j)];
                    if (lj < 0) {
                        out[j] += a[j];
                        continue;
                    }
                    const float* rj = rollout_.data() + r_off_[size_t(b)] + size_t(lj) * size_t(T);
                    for (int32_t t = 0; t < T; ++t) out[t] += a[j] * rj[t];
                }
                for (int32_t t = 0; t < T; ++t) out[t] = (out[t] + old[t]) / sum;
            }
        }
        rollout_.swap(next_);
    }

    // Each row's importance: its column sum of the rollout (1 from its own unit row where it was not queried).
    void keep_importance(const StepInput& in, const BatchLayout& lay) const {
        for (int b = 0; b < lay.n_seq(); ++b) {
            const int32_t T = lay.seq_len(b), nq = q_off_[size_t(b) + 1] - q_off_[size_t(b)], cu = lay.cu[size_t(b)];
            std::vector<float>& imp = state(in.seqs[size_t(b)].id).importance;
            imp.assign(size_t(T), 0.f);
            for (int32_t t = 0; t < T; ++t)
                if (local_[size_t(cu + t)] < 0) imp[size_t(t)] = 1.f;
            for (int32_t i = 0; i < nq; ++i) {
                const float* row = rollout_.data() + r_off_[size_t(b)] + size_t(i) * size_t(T);
                for (int32_t t = 0; t < T; ++t) imp[size_t(t)] += row[t];
            }
        }
    }

    // The certainty prior: at step 1 every response position's confidence (the sampler's score of its logits row);
    // with d2_update_prior also each later step's, for the masked positions whose logits row the step computed.
    void update_prior(Forward& fwd, const StepInput& in, const RowSet& q, const Tensor& h) {
        if (in.step != 1 && !p_.d2_update_prior) return;
        const BatchLayout& lay   = *in.lay;
        const bool         dream = cfg_.family == Family::Dream;
        idx_.clear();
        where_.clear();
        for (int b = 0; b < lay.n_seq(); ++b) {
            const SeqProgress& s  = in.seqs[size_t(b)];
            SeqState&          st = state(s.id);
            if (in.step == 1) st.prior.assign(size_t(s.gen_length), 0.f);
            for (int32_t r : s.masked) {
                const int32_t row = lay.cu[size_t(b)] + std::max(0, s.prompt_len + r - (dream ? 1 : 0));
                const int32_t li  = local_[size_t(row)];
                if (li < 0) continue;
                idx_.push_back(q_off_[size_t(b)] + li);
                where_.push_back({s.id, r});
            }
        }
        if (idx_.empty()) return;
        const Tensor  logits    = fwd.logits(h, idx_);
        const int32_t banned[1] = {cfg_.mask_id};
        tok_.resize(idx_.size());
        conf_.resize(idx_.size());
        // Confidence for both families, as the authors' scripts decode (maskgit_plus): a negative-entropy prior would
        // make the block's bias (+ the largest score) no bias at all.
        fwd.backend().score_logits(logits, ScoreKind::Confidence, banned, tok_, conf_);
        for (size_t i = 0; i < idx_.size(); ++i) state(where_[i].first).prior[size_t(where_[i].second)] = conf_[i];
    }

    mutable std::vector<SeqState>        seq_;  // by sequence id
    mutable std::vector<uint8_t>         masked_, decoded_, want_;
    mutable std::vector<double>          density_, score_, gauss_;
    mutable std::vector<int32_t>         order_, rest_;
    std::vector<float>                   probs_, rollout_, next_;  // one layer's head-mean attention; the rollout
    std::vector<int32_t>                 q_off_, r_off_, local_;   // query offsets, rollout offsets, row -> local
    std::vector<int32_t>                 idx_, tok_;
    std::vector<float>                   conf_;
    std::vector<std::pair<int32_t, int>> where_;  // update_prior: (sequence id, position) of each scored row
};

}  // namespace

std::unique_ptr<DecodingMethod> make_d2_cache_method(const ModelConfig& cfg, const DiffusionParams& p) {
    return std::make_unique<D2CacheMethod>(cfg, p);
}

}  // namespace dyllm
