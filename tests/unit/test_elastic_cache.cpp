// Elastic-Cache (engine/methods/elastic_cache.cpp) on tiny random checkpoints of both families (Dream: GQA 4:2): its
// schedule and sliding window, the dense decode it becomes with gamma above 1, and its refresh decision against the
// drift test recomputed here from the caches' queries and keys.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/engine.h"
#include "engine/forward.h"
#include "engine/methods/method.h"
#include "support/tiny_models.h"
#include "test_method_steps.h"

using namespace dyllm;
using dyllm::test::make_tiny_checkpoint;
using dyllm::test::MethodSteps;
using dyllm::test::random_prompt;
using dyllm::test::run_one;

namespace {

DiffusionParams elastic_params() {
    DiffusionParams p;
    p.method         = Method::ElasticCache;
    p.gen_length     = 16;
    p.steps          = 16;
    p.block_length   = 8;
    p.ignore_eos     = true;
    p.elastic_window = 4;
    return p;
}

std::vector<float> host(Backend& be, const Tensor& t) {
    std::vector<float> out(size_t(t.view().rows() * t.view().cols()));
    be.download(t, out.data());
    return out;
}

// softmax over keys [0, T) of q_row · k_j / sqrt(D), per head (GQA: head h reads KV head h / group): [H][T].
std::vector<std::vector<double>> probs(const ModelConfig& c, const std::vector<float>& q, int32_t row,
                                       const std::vector<float>& k, int32_t T) {
    const int                        H = c.n_head, D = c.head_dim, group = c.n_head / c.n_kv_head;
    std::vector<std::vector<double>> p(static_cast<size_t>(H), std::vector<double>(static_cast<size_t>(T)));
    for (int h = 0; h < H; ++h) {
        double m = -INFINITY;
        for (int32_t j = 0; j < T; ++j) {
            double d = 0;
            for (int e = 0; e < D; ++e)
                d += double(q[size_t(row) * size_t(c.q_dim()) + size_t(h * D + e)]) *
                     double(k[size_t(j) * size_t(c.kv_dim()) + size_t((h / group) * D + e)]);
            m = std::max(m, p[size_t(h)][size_t(j)] = d / std::sqrt(double(D)));
        }
        double z = 0;
        for (double& v : p[size_t(h)]) z += (v = std::exp(v - m));
        for (double& v : p[size_t(h)]) v /= z;
    }
    return p;
}

}  // namespace

TEST_CASE("elastic-cache: step 1 full, then the window's rows; deterministic; every position decoded",
          "[elastic][schedule]") {
    const Family fam    = GENERATE(Family::LLaDA, Family::Dream);
    auto         m      = Model::load(make_tiny_checkpoint(fam, DType::F32, 1, 5).string(), BackendKind::Cpu, 1);
    const auto   prompt = random_prompt(m->config(), 10, 4);
    for (const float gamma : {0.f, 0.9f}) {
        DiffusionParams p        = elastic_params();
        p.elastic_gamma          = gamma;
        const GenerationResult a = run_one(*m, prompt, p), b = run_one(*m, prompt, p);
        INFO("gamma " << gamma);
        REQUIRE(a.steps.size() == 16);
        CHECK(a.steps[0].kind == StepKind::ElasticFull);
        for (const LayerAccount& l : a.steps[0].layers) CHECK(l.query_rows == 26);
        for (size_t i = 1; i < a.steps.size(); ++i) {
            CHECK(a.steps[i].kind == StepKind::ElasticCached);
            // Tracked tokens (at most one per layer), the previous step's decoded position, the window (4 rows).
            CHECK(a.steps[i].layers[0].query_rows <= int32_t(m->config().n_layer) + 1 + 4);
            // gamma 0: the drift test never fails, so no layer recomputes more rows than layer 0.
            if (gamma == 0.f)
                for (const LayerAccount& l : a.steps[i].layers) CHECK(l.query_rows == a.steps[i].layers[0].query_rows);
        }
        CHECK(a.sequences[0].token_ids == b.sequences[0].token_ids);
        CHECK(a.sequences[0].unmask_step == b.sequences[0].unmask_step);
        CHECK(a.total_flops == b.total_flops);
        for (int32_t t : a.sequences[0].token_ids) CHECK(t != m->config().mask_id);
        // The sliding window: each step decodes one of the first four masked positions.
        std::vector<int32_t> masked(16);
        for (int32_t r = 0; r < 16; ++r) masked[size_t(r)] = r;
        for (int32_t s = 1; s <= 16; ++s) {
            const auto it = std::find(a.sequences[0].unmask_step.begin(), a.sequences[0].unmask_step.end(), s);
            REQUIRE(it != a.sequences[0].unmask_step.end());
            const int32_t pos = int32_t(it - a.sequences[0].unmask_step.begin());
            const auto    at  = std::find(masked.begin(), masked.end(), pos);
            REQUIRE(at != masked.end());
            CHECK(at - masked.begin() < 4);
            masked.erase(at);
        }
    }
}

TEST_CASE("elastic-cache with gamma above 1 is the original decode", "[elastic][exact]") {
    const Family    fam      = GENERATE(Family::LLaDA, Family::Dream);
    auto            m        = Model::load(make_tiny_checkpoint(fam, DType::F32, 1, 7).string(), BackendKind::Cpu, 1);
    const auto      prompt   = random_prompt(m->config(), 12, 9);
    DiffusionParams p        = elastic_params();
    p.elastic_gamma          = 2.f;  // every step dense
    p.elastic_window         = 0;    // the blocks' candidates, as original's
    DiffusionParams po       = elastic_params();
    po.method                = Method::Original;
    const GenerationResult e = run_one(*m, prompt, p), o = run_one(*m, prompt, po);
    // The same dense layers over the same rows: the same logits bit for bit, hence the same decode.
    CHECK(e.sequences[0].token_ids == o.sequences[0].token_ids);
    CHECK(e.sequences[0].unmask_step == o.sequences[0].unmask_step);
    for (const StepRecord& s : e.steps) {
        CHECK(s.kind == StepKind::ElasticFull);
        CHECK(s.layers[0].query_rows == 28);
    }
}

TEST_CASE("elastic-cache refreshes from the layer after the one whose tracked attention drifted", "[elastic][drift]") {
    const Family       fam = GENERATE(Family::LLaDA, Family::Dream);
    auto               m   = Model::load(make_tiny_checkpoint(fam, DType::F32, 1, 11).string(), BackendKind::Cpu, 1);
    const ModelConfig& c   = m->config();
    const int32_t      P = 6, R = 8, T = P + R, W = 3;
    const bool         dream = fam == Family::Dream;
    Backend&           be    = m->backend();

    // Step 1 (dense), then step 2 after positions 0..2 were decoded, with a given gamma; the caches' queries and keys
    // of layer 0 before and after step 2, and each layer's query row count in step 2.
    struct Trace {
        std::vector<float>   q1, k1, q2, k2;
        std::vector<int32_t> rows;  // step 2's query rows per layer
        RowSet               q;     // step 2's query rows
    };
    auto two_steps = [&](float gamma) {
        DiffusionParams p = elastic_params();
        p.gen_length      = R;
        p.elastic_window  = W;
        p.elastic_gamma   = gamma;
        MethodSteps ms(*m, make_method(Method::ElasticCache, c, p), P, R);
        for (LayerCache& lc : ms.caches) {
            lc.q      = be.alloc(be.cache_dtype(), T, c.q_dim());
            lc.hidden = be.alloc(be.cache_dtype(), T, c.n_embd);
        }
        std::vector<int32_t> all(static_cast<size_t>(R));
        for (int32_t r = 0; r < R; ++r) all[size_t(r)] = r;
        Trace tr;
        CHECK(ms.step(1, 0, {}, all) == StepKind::ElasticFull);
        tr.q1 = host(be, ms.caches[0].q), tr.k1 = host(be, ms.caches[0].k);
        for (int32_t r = 0; r < 3; ++r) ms.lay.tokens[size_t(P + r)] = 7 + r;  // positions 0..2 decoded
        all.erase(all.begin(), all.begin() + 3);
        CHECK(ms.step(2, 3, {0, 1, 2}, all) == StepKind::ElasticCached);
        tr.q2 = host(be, ms.caches[0].q), tr.k2 = host(be, ms.caches[0].k);
        for (const LayerAccount& a : ms.fwd.accounts()) tr.rows.push_back(a.query_rows);
        tr.q = ms.q;
        return tr;
    };
    const Trace base = two_steps(0.f);

    // The tracked tokens: per layer, the decoded key the window's rows (masked positions 0..W-1 at step 1; for Dream
    // the row before each) attend most, summed over heads and rows; layer l's from step 1's caches of layer l.
    std::vector<int32_t> tracked;
    {
        DiffusionParams p = elastic_params();
        p.gen_length      = R;
        p.elastic_window  = W;
        MethodSteps ms(*m, make_method(Method::ElasticCache, c, p), P, R);
        for (LayerCache& lc : ms.caches) {
            lc.q      = be.alloc(be.cache_dtype(), T, c.q_dim());
            lc.hidden = be.alloc(be.cache_dtype(), T, c.n_embd);
        }
        std::vector<int32_t> all(static_cast<size_t>(R));
        for (int32_t r = 0; r < R; ++r) all[size_t(r)] = r;
        ms.step(1, 0, {}, all);
        for (int l = 0; l < c.n_layer; ++l) {
            const auto          q = host(be, ms.caches[size_t(l)].q), k = host(be, ms.caches[size_t(l)].k);
            std::vector<double> score(static_cast<size_t>(T), 0.0);
            for (int32_t w = 0; w < W; ++w) {
                const auto pr = probs(c, q, P + w - (dream ? 1 : 0), k, T);
                for (const auto& ph : pr)
                    for (int32_t j = 0; j < T; ++j) score[size_t(j)] += ph[size_t(j)];
            }
            int32_t best = 0;
            for (int32_t j = 1; j < P; ++j)  // every response position is masked at step 1
                if (score[size_t(j)] > score[size_t(best)]) best = j;
            tracked.push_back(best);
        }
        std::sort(tracked.begin(), tracked.end());
        tracked.erase(std::unique(tracked.begin(), tracked.end()), tracked.end());
    }
    // Step 2 queries the tracked tokens, positions 0..2 (just decoded) and the window (positions 3..2 + W).
    std::vector<int32_t> want = tracked;
    for (int32_t r = 0; r < 3; ++r) want.push_back(P + r);
    for (int32_t w = 3; w < 3 + W; ++w) want.push_back(P + w - (dream ? 1 : 0));
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    CHECK(base.q.pos == want);

    // Layer 0's drift: the mean over (tracked token, key) of the cosine over heads between the tracked token's
    // probabilities from step 1's query and keys and from step 2's.
    double sum = 0;
    for (int32_t t : tracked) {
        const auto a = probs(c, base.q1, t, base.k1, T), b = probs(c, base.q2, t, base.k2, T);
        for (int32_t j = 0; j < T; ++j) {
            double w12 = 0, w1 = 0, w2 = 0;
            for (int h = 0; h < c.n_head; ++h) {
                w12 += a[size_t(h)][size_t(j)] * b[size_t(h)][size_t(j)];
                w1 += a[size_t(h)][size_t(j)] * a[size_t(h)][size_t(j)];
                w2 += b[size_t(h)][size_t(j)] * b[size_t(h)][size_t(j)];
            }
            sum += w12 / (std::max(std::sqrt(w1), 1e-8) * std::max(std::sqrt(w2), 1e-8));  // torch's, per norm
        }
    }
    const double sim = sum / double(tracked.size() * size_t(T));
    INFO("layer 0 drift cosine " << sim);
    REQUIRE(1.0 - sim > 1e-5);  // the new tokens moved the tracked tokens' attention
    const int32_t n_q = int32_t(want.size());
    for (int32_t r : base.rows) CHECK(r == n_q);  // gamma 0: never

    // Just above the drift cosine: layer 0 drifted, so every row is recomputed from layer 1 on. Just below: layer 0
    // passes (later layers run their own tests). The margin, a quarter of 1 - sim (at least 2.5e-6), is far above the
    // method's fp32 rounding of the probabilities (~1e-7 on the mean cosine) and float's spacing near 1 (6e-8).
    const double margin = (1.0 - sim) / 4;
    const Trace  above  = two_steps(float(sim + margin));
    CHECK(above.rows[0] == n_q);
    for (int l = 1; l < c.n_layer; ++l) CHECK(above.rows[size_t(l)] == T);
    const Trace below = two_steps(float(sim - margin));
    CHECK(below.rows[0] == n_q);
    CHECK(below.rows[1] == n_q);
    // A refresh recomputes with the cached queries and keys of layer 0 unchanged: layer 0 reads the same caches.
    CHECK(above.q2 == base.q2);
    CHECK(above.k2 == base.k2);
}
