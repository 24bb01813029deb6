// Optimised logit scoring: one banned-id mask shared by all rows, rows over the thread pool; exp of 16 logits at a
// time in fp32 (simd::exp_nonpos, within ~2 ulp of expf), accumulated in 16 fp64 lanes (126k terms per row for
// LLaDA's vocabulary).
#include "kernels/cpu/score_logits.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/common/scalar_math.h"
#include "kernels/cpu/simd.h"

// The 16-lane values below stay in registers (always-inlined helpers, a lambda inlined into its per-ISA caller): no
// vector is ever passed by value (GCC warns about the ABI at the end of a target_clones function, outside any
// push/pop, so the whole file).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace dyllm::cpu {

namespace {

// sum_v g(exp(r[v] - m)) in fp64 for g = identity (the softmax normaliser) or the entropy term of p = e * inv_l.
// One libm expf and an fp64 add in order per logit took 7.8 ns (Emerald Rapids Xeon): a 64-step decode of tiny-llada
// spent 5% of every cached step here. The last n % 16 logits go through the same vector exp (the padding lanes are
// not added), so every logit gets the same function.
template <bool Entropy>
DYLLM_CPU_CLONES double exp_sum(const float* r, int64_t n, float m, float inv_l) {
    using simd::V16;
    double  acc[simd::kLanes] = {};
    int64_t v                 = 0;
    auto    add               = [&](V16 e, int lanes) {
        for (int l = 0; l < lanes; ++l) acc[l] += Entropy ? double(neg_entropy_term(e[l] * inv_l)) : double(e[l]);
    };
    const V16 mv = V16{} + m;
    for (; v + simd::kLanes <= n; v += simd::kLanes) add(simd::exp_nonpos(simd::load16(r + v) - mv), simd::kLanes);
    if (v < n) {
        float tail[simd::kLanes];
        for (int l = 0; l < simd::kLanes; ++l) tail[l] = v + l < n ? r[v + l] : m;
        add(simd::exp_nonpos(simd::load16(tail) - mv), int(n - v));
    }
    double s = 0.0;
    for (double a : acc) s += a;
    return s;
}

DYLLM_CPU_CLONES float row_max(const float* r, int64_t n) {
    float   mx[simd::kLanes];
    int64_t v = 0;
    for (int l = 0; l < simd::kLanes; ++l) mx[l] = -INFINITY;
    for (; v + simd::kLanes <= n; v += simd::kLanes)
        for (int l = 0; l < simd::kLanes; ++l) mx[l] = std::max(mx[l], r[v + l]);
    float m = -INFINITY;
    for (; v < n; ++v) m = std::max(m, r[v]);
    for (float x : mx) m = std::max(m, x);
    return m;
}

void score_row(const float* r, int64_t n_vocab, const uint8_t* ban, ScoreRule rule, int32_t& token, float& score) {
    int64_t best = -1;
    float   top  = -INFINITY;
    for (int64_t v = 0; v < n_vocab; ++v) {
        if (ban[v]) continue;
        if (best < 0 || r[v] > top) {  // strict: the lowest id wins ties
            best = v;
            top  = r[v];
        }
    }
    token = int32_t(best);
    if (best < 0) {
        score = -INFINITY;
        return;
    }
    // The softmax runs over every id, banned ones included (engine/README.md decision 11), relative to the maximum over
    // every id.
    const float  m = row_max(r, n_vocab);
    const double l = exp_sum<false>(r, n_vocab, m, 0.0f);
    if (rule == ScoreRule::Confidence) {
        // The top logit's exp by the same function as the normaliser's terms (4 lanes: the same bits at any width).
        score = float(double(simd::exp_nonpos_n<4>(simd::Lanes<4>::F{} + (top - m))[0]) / l);
        return;
    }
    score = float(exp_sum<true>(r, n_vocab, m, float(1.0 / l)));
}

}  // namespace

void score_logits(CMatF logits, ScoreRule rule, const int32_t* banned, int64_t n_banned, int32_t* tokens, float* scores,
                  ThreadPool& pool) {
    if (logits.rows == 0) return;
    thread_local std::vector<uint8_t> ban;  // kept between calls: no allocation per step
    ban.assign(size_t(logits.cols), 0);
    for (int64_t t = 0; t < n_banned; ++t) ban[size_t(banned[t])] = 1;
    const uint8_t* ban_p = ban.data();  // the lambda runs on pool threads: never name the thread_local inside it
    // kMinSplitWork units per logit, set for the scalar form (a libm expf and an fp64 add in order per logit: 7.8 ns
    // for confidence on one thread, Emerald Rapids Xeon; 22 rows x 374 ids took 64 us and ran inline at 2 threads when
    // counted as 4 units per logit). The vector exps now take about 3.3 ns per logit (v2 tiny-llada trace, 82 rows x
    // 374 ids in 102 us, op timer included), so these counts overstate the work ~2.4x and split from 22 rows of 374
    // ids instead of ~52. Kept: measured at 2 threads, splitting that early pays (v2 tiny-llada, bench prompt, trace
    // medians of 3 runs, op per step at -t 1 -> -t 2: fast-dual's 32-row cached steps 20 -> 17 us, DyLLM's
    // sparse-response steps 26 -> 21 us).
    const int64_t per_logit = rule == ScoreRule::Confidence ? 32 : 64;
    pool.parallel_for(logits.rows, per_logit * logits.rows * logits.cols, [&](int64_t i, int) {
        score_row(logits.row(i), logits.cols, ban_p, rule, tokens[i], scores[i]);
    });
}

}  // namespace dyllm::cpu
