// The sampler (see sampler.h): candidates, scoring, selection with a deterministic tie-break, commit, EOS rule.
#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "engine/errors.h"
#include "engine/op_scope.h"
#include "kernels/common/score_math.h"

namespace dyllm {

int32_t SequenceState::unmasked() const {
    int32_t n = 0;
    for (int32_t s : unmask_step) n += (s > 0);
    return n;
}

void block_candidates(std::span<const int32_t> response, int32_t mask_id, int block_length, std::vector<int32_t>& out) {
    int32_t unmasked = 0;
    for (int32_t t : response) unmasked += (t != mask_id);
    const int64_t block_idx = unmasked / block_length;
    const int64_t end       = std::min<int64_t>(int64_t(response.size()), int64_t(block_length) * (block_idx + 1));
    out.clear();
    for (int64_t p = 0; p < end; ++p)
        if (response[size_t(p)] == mask_id) out.push_back(int32_t(p));
}

std::vector<int32_t> block_candidates(std::span<const int32_t> response, int32_t mask_id, int block_length) {
    std::vector<int32_t> c;
    block_candidates(response, mask_id, block_length, c);
    return c;
}

void select_candidates_in_place(std::vector<Candidate>& cands, int n_transfer, float threshold) {
    // NaN ranks lowest, so the comparison is a strict weak order whatever the scores hold.
    auto key = [](float s) { return std::isnan(s) ? -std::numeric_limits<float>::infinity() : s; };
    std::sort(cands.begin(), cands.end(), [&](const Candidate& a, const Candidate& b) {
        return candidate_before(key(a.score), a.pos, key(b.score), b.pos);
    });
    size_t kept = 0;  // the kept ones move to the front, in rank order
    for (size_t r = 0; r < cands.size(); ++r)
        if (candidate_kept(int(r), cands[r].score, n_transfer, threshold)) cands[kept++] = cands[r];
    cands.resize(kept);
}

std::vector<Candidate> select_candidates(std::vector<Candidate> cands, int n_transfer, float threshold) {
    select_candidates_in_place(cands, n_transfer, threshold);
    return cands;
}

bool finished_by_eos(std::span<const int32_t> response, std::span<const int32_t> new_positions, int32_t eos_id,
                     int32_t mask_id) {
    int32_t first_eos = -1;
    for (int32_t p : new_positions)
        if (response[size_t(p)] == eos_id && (first_eos < 0 || p < first_eos)) first_eos = p;
    if (first_eos < 0) return false;
    for (int32_t p = 0; p < first_eos; ++p)
        if (response[size_t(p)] == mask_id) return false;
    return true;
}

namespace {

// splitmix64 (a fixed, portable mixer: std::shuffle's algorithm is the library's choice).
uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z          = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z          = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

}  // namespace

void random_block_order(uint64_t seed, int32_t seq_id, int32_t block, int32_t lo, int32_t hi,
                        std::vector<int32_t>& out) {
    out.clear();
    for (int32_t p = lo; p < hi; ++p) out.push_back(p);
    uint64_t state = seed ^ (uint64_t(uint32_t(seq_id)) << 32) ^ uint64_t(uint32_t(block)) ^ 0x6A09E667F3BCC908ull;
    // Fisher-Yates, the index drawn by a multiply-shift of 32 random bits (unbiased enough for an order of <= 2^16
    // positions; exactly reproducible, which is what matters here).
    for (size_t i = out.size(); i > 1; --i) {
        const uint64_t r = splitmix64(state) >> 32;
        const size_t   j = size_t((r * uint64_t(i)) >> 32);
        std::swap(out[i - 1], out[j]);
    }
}

void random_order_next(uint64_t seed, int32_t seq_id, int32_t gen_length, int block_length, int32_t unmasked,
                       std::span<const int32_t> masked, int n, std::vector<int32_t>& order, std::vector<int32_t>& out) {
    out.clear();
    const int32_t block = std::min(unmasked, gen_length - 1) / block_length;
    const int32_t lo = block * block_length, hi = std::min(gen_length, lo + block_length);
    random_block_order(seed, seq_id, block, lo, hi, order);
    for (int32_t p : order) {
        if (int(out.size()) >= n) break;
        if (std::binary_search(masked.begin(), masked.end(), p)) out.push_back(p);
    }
    std::sort(out.begin(), out.end());
}

Sampler::Sampler(const ModelConfig& cfg, const DiffusionParams& p, bool random_order, int32_t sliding_window)
    : cfg_(cfg), p_(p), rng_(p.seed), random_order_(random_order), sliding_window_(sliding_window) {}

void Sampler::plan(std::span<SequenceState* const> live, std::span<const int32_t> cu,
                   std::span<const int32_t> first_query, Plan& pl) const {
    pl.cand.resize(live.size());
    pl.rows.clear();
    for (size_t b = 0; b < live.size(); ++b) {
        const SequenceState& s = *live[b];
        if (sliding_window_ > 0) {
            pl.cand[b].clear();
            for (int32_t r = 0; r < s.R && int32_t(pl.cand[b].size()) < sliding_window_; ++r)
                if (s.tokens[size_t(s.P + r)] == cfg_.mask_id) pl.cand[b].push_back(r);
        } else {
            block_candidates(s.response(), cfg_.mask_id, p_.block_length, pl.cand[b]);
        }
        if (random_order_) {
            const int n = !std::isnan(p_.conf_threshold) ? 1 : p_.gen_length / p_.steps;
            random_order_next(p_.seed, s.id, s.R, p_.block_length, s.unmasked(), pl.cand[b], n, order_, next_);
            pl.cand[b].assign(next_.begin(), next_.end());
        }
        for (int32_t c : pl.cand[b]) {
            int32_t p_abs = s.P + c;
            if (cfg_.family == Family::Dream) p_abs = std::max(first_query[b], p_abs - 1);
            pl.rows.push_back(cu[b] + p_abs);
        }
    }
}

// Greedy scoring on the backend; seeded sampling from softmax(logits / T) on the host when temperature > 0.
// [MASK] is never a prediction.
void Sampler::score(Backend& be, EventSink* sink, int32_t step, const Tensor& logits, std::span<int32_t> tok,
                    std::span<float> score) {
    if (tok.empty()) return;
    const ScoreKind kind      = cfg_.family == Family::Dream ? ScoreKind::NegEntropy : ScoreKind::Confidence;
    const int32_t   banned[1] = {cfg_.mask_id};
    ScopedOp        s(sink, step, -1, OpClass::Sampling, 0, double(logits.view().bytes()), int32_t(tok.size()));
    if (p_.temperature <= 0.f) {
        be.score_logits(logits, kind, banned, tok, score);
        return;
    }
    const int64_t        V    = logits.cols();
    std::vector<float>&  host = host_logits_;  // kept between steps, as the session's lists
    std::vector<double>& pr   = probs_;
    host.resize(size_t(logits.rows() * V));
    be.download(logits, host.data());
    pr.resize(size_t(V));
    for (size_t r = 0; r < tok.size(); ++r) {
        // The draw never picks [MASK]; the score's softmax runs over every id, [MASK] included
        // (engine/README.md decision 11).
        const float* x  = host.data() + r * size_t(V);
        double       mx = -INFINITY;
        for (int64_t v = 0; v < V; ++v) mx = std::max(mx, double(x[v]) / p_.temperature);
        double sum = 0;
        for (int64_t v = 0; v < V; ++v) sum += pr[size_t(v)] = std::exp(double(x[v]) / p_.temperature - mx);
        const double p_mask      = pr[size_t(cfg_.mask_id)];
        pr[size_t(cfg_.mask_id)] = 0.0;
        std::uniform_real_distribution<double> u(0.0, sum - p_mask);
        const double                           draw = u(rng_);
        double                                 acc  = 0;
        int64_t                                pick = 0;
        for (int64_t v = 0; v < V; ++v) {
            acc += pr[size_t(v)];
            if (pr[size_t(v)] > 0 && acc >= draw) {
                pick = v;
                break;
            }
        }
        tok[r] = int32_t(pick);
        if (kind == ScoreKind::Confidence) {
            score[r] = float(pr[size_t(pick)] / sum);
        } else {
            double ne = (p_mask / sum) * std::log(p_mask / sum + 1e-10);  // [MASK]'s term (its pr entry is 0)
            for (double q : pr) ne += (q / sum) * std::log(q / sum + 1e-10);
            score[r] = float(ne);
        }
    }
}

void Sampler::sample(Backend& be, EventSink* sink, int32_t step, const Tensor& logits, const Plan& plan,
                     std::span<SequenceState* const> live, std::vector<Unmasked>& out) {
    std::vector<int32_t>& tok = tok_;
    std::vector<float>&   sc  = score_;
    tok.resize(plan.rows.size());
    sc.resize(plan.rows.size());
    score(be, sink, step, logits, tok, sc);

    const bool  thr_mode   = !std::isnan(p_.conf_threshold);
    const int   n_transfer = thr_mode ? 1 : p_.gen_length / p_.steps;
    const float threshold  = thr_mode ? p_.conf_threshold : std::numeric_limits<float>::infinity();
    out.resize(live.size());
    size_t k = 0;
    for (size_t b = 0; b < live.size(); ++b) {
        SequenceState&          s  = *live[b];
        std::vector<Candidate>& cs = cands_;
        cs.clear();
        for (int32_t c : plan.cand[b]) {
            // A finite logit row always gives a finite score (a probability, or an entropy >= -log V).
            if (!std::isfinite(sc[k]))
                throw LoadError("non-finite logits at step " + std::to_string(step) + " (response position " +
                                std::to_string(c) + "): corrupt weights?");
            cs.push_back(Candidate{c, tok[k], sc[k]});
            ++k;
        }
        Unmasked& u = out[b];
        u.pos.clear();
        u.tokens.clear();
        u.scores.clear();
        select_candidates_in_place(cs, n_transfer, threshold);
        for (const Candidate& c : cs) {
            s.tokens[size_t(s.P + c.pos)] = c.token;
            s.unmask_step[size_t(c.pos)]  = step;
            s.scores[size_t(c.pos)]       = c.score;
            u.pos.push_back(c.pos);
            u.tokens.push_back(c.token);
            u.scores.push_back(c.score);
        }
        s.last_unmasked = u.pos;
        // S_0 in position order (engine/README.md decision 2).
        std::sort(s.last_unmasked.begin(), s.last_unmasked.end());
        s.steps_run = step;
        if (!p_.ignore_eos && finished_by_eos(s.response(), s.last_unmasked, cfg_.eos_id, cfg_.mask_id))
            s.finished = s.by_eos = true;
        if (s.unmasked() >= s.R || (!thr_mode && step >= p_.steps)) s.finished = true;
    }
}

}  // namespace dyllm
