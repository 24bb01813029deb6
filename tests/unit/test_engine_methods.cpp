// Exactness of the DyLLM sparse step and the baselines against dense decoding (issue 3, spec Appendix B), on tiny
// random checkpoints of both families. All computation is fp32 on the CPU backend, so "equal up to rounding" means
// the only differences come from summation order (GEMM blocking over different row counts): ~1e-6 relative.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/engine.h"
#include "engine/forward.h"
#include "support/tiny_models.h"

using namespace dyllm;

namespace {

struct Run {
    GenerationResult                                   result;
    std::map<int, std::vector<float>>                  logits;  // step -> logits rows (candidate order)
    std::map<int, std::vector<std::pair<int, int>>>    where;
    int64_t                                            n_vocab = 0;
};

Run run(const Model& m, const std::vector<std::vector<int32_t>>& prompts, const DiffusionParams& p) {
    Run     r;
    Session s(m);
    s.set_logits_observer([&](int step, const std::vector<std::pair<int, int>>& w, const std::vector<float>& lg,
                              int64_t V) {
        r.logits[step] = lg;
        r.where[step]  = w;
        r.n_vocab      = V;
    });
    s.start(prompts, p);
    s.run();
    r.result = s.result();
    return r;
}

std::vector<int32_t> random_prompt(const ModelConfig& cfg, int n, uint32_t seed) {
    std::vector<int32_t> p;
    uint32_t             x = seed * 2654435761u + 1;
    while (int(p.size()) < n) {
        x = x * 1664525u + 1013904223u;
        const int32_t t = int32_t((x >> 8) % uint32_t(cfg.vocab_size));
        if (t != cfg.mask_id && t != cfg.eos_id) p.push_back(t);
    }
    return p;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
    return d;
}

double max_abs(const std::vector<float>& a) {
    double d = 0;
    for (float v : a) d = std::max(d, std::fabs(double(v)));
    return d;
}

DiffusionParams base_params(Method m) {
    DiffusionParams p;
    p.method       = m;
    p.gen_length   = 16;
    p.steps        = 16;
    p.block_length = 8;
    p.ignore_eos   = true;  // compare whole canvases
    return p;
}

}  // namespace

TEST_CASE("dyllm with tau > 1, exact attention and full-query steps reproduces original", "[dyllm][exact]") {
    const Family fam = GENERATE(Family::LLaDA, Family::Dream);
    auto         m   = Model::load(make_tiny_checkpoint(fam, DType::F32, 1, 7).string());
    const auto   prompt = random_prompt(m->config(), 20, 3);

    Run orig = run(*m, {prompt}, base_params(Method::Original));
    DiffusionParams p = base_params(Method::DyLLM);
    p.tau = 1.01f, p.approx = false, p.fullq_every = 1, p.full_steps = 1;
    Run dy = run(*m, {prompt}, p);

    CHECK(dy.result.sequences[0].token_ids == orig.result.sequences[0].token_ids);
    CHECK(dy.result.sequences[0].unmask_step == orig.result.sequences[0].unmask_step);
    REQUIRE(dy.logits.size() == orig.logits.size());
    double worst = 0;
    for (const auto& [step, lg] : orig.logits) {
        // fp32 everywhere; only the GEMM summation order differs between the dense and sparse paths (different
        // row subsets per call): relative error ~1e-6, so 1e-4 of the logit scale is a safe bound.
        const double d = max_abs_diff(dy.logits[step], lg);
        worst          = std::max(worst, d);
        CHECK(d <= 1e-4 * std::max(1.0, max_abs(lg)));
    }
    INFO("max |logit diff| over all steps: " << worst);
    // Every sparse step recomputed every row at every layer >= 1 (S_l = all rows when tau > 1).
    for (const auto& rec : dy.result.steps) {
        if (rec.kind == StepKind::Full) continue;
        CHECK(rec.kind == StepKind::SparseFullQuery);
        for (size_t l = 0; l < rec.layers.size(); ++l) {
            CHECK(rec.layers[l].ffn_rows == rec.layers[l].query_rows);
            if (l > 0) CHECK(rec.layers[l].kv_rows == rec.layers[l].query_rows);
        }
        CHECK(rec.layers[0].kv_rows == 1);  // layer 0: the one position unmasked in the previous step (n_u = 1)
    }
}

TEST_CASE("with approximate attention only layer 0's approximation differs from dense", "[dyllm][approx]") {
    const Family fam = GENERATE(Family::LLaDA, Family::Dream);
    auto         m   = Model::load(make_tiny_checkpoint(fam, DType::F32, 1, 11).string());
    const auto   prompt = random_prompt(m->config(), 20, 5);
    Run          orig   = run(*m, {prompt}, base_params(Method::Original));
    DiffusionParams p   = base_params(Method::DyLLM);
    p.tau = 1.01f, p.approx = true, p.fullq_every = 1, p.full_steps = 1;
    Run dy = run(*m, {prompt}, p);
    // Step 2 is the first sparse step and starts from the same canvas as original's step 2: the logits differ only
    // through layer 0's approximate context for rows not decoded in step 1 (spec Appendix B item 2). Measure it.
    const double d     = max_abs_diff(dy.logits[2], orig.logits[2]);
    const double scale = max_abs(orig.logits[2]);
    INFO("step 2: max |logit diff| = " << d << " (logit scale " << scale << ")");
    // Bound: the approximation keeps layer 0's attention probabilities of the unchanged keys fixed; with one changed
    // key out of ~36 and N(0, 0.02) weights the context moves by well under 1%, which reaches the logits damped by
    // the later exact layers. 2% of the logit scale is a loose, measured bound (observed: see INFO).
    CHECK(d <= 0.02 * scale);
    // And with the exact ablation the same step matches to rounding, so the difference is the approximation's.
    p.approx = false;
    Run ex   = run(*m, {prompt}, p);
    CHECK(max_abs_diff(ex.logits[2], orig.logits[2]) <= 1e-4 * std::max(1.0, scale));
}

TEST_CASE("caches after a FULL step are consistent with a dense recomputation", "[dyllm][cache]") {
    const Family fam = GENERATE(Family::LLaDA, Family::Dream);
    auto         m   = Model::load(make_tiny_checkpoint(fam, DType::F32, 1, 13).string());
    const auto&  cfg = m->config();
    BatchLayout  lay;
    lay.cu = {0, 24};
    lay.prompt_len = {16};
    lay.tokens = random_prompt(cfg, 24, 9);
    std::vector<LayerCache> caches(size_t(cfg.n_layer));
    Backend& be = m->backend();
    for (auto& c : caches) {
        c.k = be.alloc(be.cache_dtype(), 24, cfg.kv_dim());
        c.v = be.alloc(be.cache_dtype(), 24, cfg.kv_dim());
        c.ctx = be.alloc(be.cache_dtype(), 24, cfg.q_dim());
        c.ffn = be.alloc(be.cache_dtype(), 24, cfg.n_embd);
    }
    Forward fwd(cfg, m->weights(), be, nullptr);
    const RowSet q = all_rows(lay);
    Tensor       h1 = fwd.embed(lay, q);
    for (int l = 0; l < cfg.n_layer; ++l) fwd.layer_dense(l, h1, lay, q, caches[size_t(l)], true, true);
    std::vector<int32_t> idx(24);
    for (int i = 0; i < 24; ++i) idx[size_t(i)] = i;
    Tensor lg1 = fwd.logits(h1, idx);

    // A sparse pass with nothing salient (tau = -1, empty S_{-1}) reads everything from the caches: K/V stay, the
    // context is C_old + 0, the FFN output is the cached one. It must reproduce the dense pass.
    Tensor h2 = fwd.embed(lay, q);
    RowSet s;
    for (int l = 0; l < cfg.n_layer; ++l) {
        SaliencyOutcome o;
        fwd.layer_sparse(l, h2, lay, q, s, caches[size_t(l)], -1.f, true, o);
        CHECK(o.salient.empty());
        for (float c : o.cosines) CHECK(c == Approx(1.0f).margin(1e-6));
        s = o.salient;
    }
    Tensor             lg2 = fwd.logits(h2, idx);
    std::vector<float> a(size_t(lg1.rows() * lg1.cols())), b(a.size());
    be.download(lg1, a.data());
    be.download(lg2, b.data());
    CHECK(max_abs_diff(a, b) <= 1e-5 * std::max(1.0, max_abs(a)));  // same fp32 ops on the same rows
}

TEST_CASE("DyLLM step kinds in a run follow the schedule for T_full 1, 2, 4, 8", "[dyllm][schedule]") {
    auto m = Model::load(make_tiny_checkpoint(Family::LLaDA, DType::F32, 1, 17).string());
    for (int tf : {1, 2, 4, 8}) {
        DiffusionParams p = base_params(Method::DyLLM);
        p.full_steps      = tf;
        Run r             = run(*m, {random_prompt(m->config(), 12, 2)}, p);
        REQUIRE(r.result.steps.size() == 16);
        for (const auto& rec : r.result.steps) CHECK(rec.kind == dyllm_step_kind(rec.step, tf, 4));
    }
}

TEST_CASE("baselines match original where they must", "[baselines][exact]") {
    const Family fam = GENERATE(Family::LLaDA, Family::Dream);
    auto         m   = Model::load(make_tiny_checkpoint(fam, DType::F32, 1, 19).string());
    const auto   prompt = random_prompt(m->config(), 20, 8);
    Run          orig   = run(*m, {prompt}, base_params(Method::Original));
    // Fast-dLLM with one step per block refreshes its cache at every step; dLLM-Cache with K_P = K_R = 1 refreshes
    // everything at every step. Both are then dense decoding.
    for (Method meth : {Method::FastPrefix, Method::FastDual, Method::DllmCache}) {
        DiffusionParams p = base_params(meth);
        if (meth == Method::DllmCache) p.kp = 1, p.kr = 1;
        else p.block_length = 1;
        if (meth != Method::DllmCache) {
            DiffusionParams po = base_params(Method::Original);
            po.block_length = 1;
            orig = run(*m, {prompt}, po);
        } else {
            orig = run(*m, {prompt}, base_params(Method::Original));
        }
        Run r = run(*m, {prompt}, p);
        INFO(method_name(meth));
        CHECK(r.result.sequences[0].token_ids == orig.result.sequences[0].token_ids);
        for (const auto& [step, lg] : orig.logits) CHECK(max_abs_diff(r.logits[step], lg) <= 1e-4 * std::max(1.0, max_abs(lg)));
    }
}

TEST_CASE("every method completes the response, also with n_u > 1 and threshold decoding", "[methods]") {
    const Family fam = GENERATE(Family::LLaDA, Family::Dream);
    auto         m   = Model::load(make_tiny_checkpoint(fam, DType::F32, 1, 23).string());
    const auto   prompt = random_prompt(m->config(), 20, 4);
    for (Method meth : {Method::Original, Method::DyLLM, Method::FastPrefix, Method::FastDual, Method::DllmCache}) {
        for (int steps : {16, 8, 4}) {
            DiffusionParams p = base_params(meth);
            p.steps           = steps;
            Run r             = run(*m, {prompt}, p);
            INFO(method_name(meth) << " steps " << steps);
            CHECK(r.result.forward_passes == steps);
            for (int32_t t : r.result.sequences[0].token_ids) CHECK(t != m->config().mask_id);
            // Each step unmasks exactly n_u positions.
            std::map<int, int> per_step;
            for (int32_t s : r.result.sequences[0].unmask_step) per_step[s]++;
            for (const auto& [s, n] : per_step) CHECK(n == 16 / steps);
        }
        DiffusionParams p = base_params(meth);
        p.conf_threshold  = fam == Family::Dream ? -0.5f : 0.05f;
        Run r             = run(*m, {prompt}, p);
        for (int32_t t : r.result.sequences[0].token_ids) CHECK(t != m->config().mask_id);
        CHECK(r.result.forward_passes <= 16);
    }
}

TEST_CASE("dyllm with tau = -1 still produces a complete response", "[dyllm]") {
    auto            m = Model::load(make_tiny_checkpoint(Family::LLaDA, DType::F32, 1, 29).string());
    DiffusionParams p = base_params(Method::DyLLM);
    p.tau             = -1.f;
    Run r             = run(*m, {random_prompt(m->config(), 16, 1)}, p);
    for (int32_t t : r.result.sequences[0].token_ids) CHECK(t != m->config().mask_id);
    // Nothing is salient after layer 0, so only layer 0 recomputes the decoded row's K/V and no layer runs the FFN.
    for (const auto& rec : r.result.steps) {
        if (rec.kind == StepKind::Full) continue;
        for (const auto& a : rec.layers) CHECK(a.ffn_rows == 0);
    }
    CHECK(r.result.recompute_fraction < 0.5);
}

TEST_CASE("a batch in lock-step gives each prompt the tokens it gets alone", "[batch]") {
    auto        m  = Model::load(make_tiny_checkpoint(Family::Dream, DType::F32, 1, 31).string());
    const auto  p1 = random_prompt(m->config(), 10, 21), p2 = random_prompt(m->config(), 17, 22);
    for (Method meth : {Method::Original, Method::DyLLM, Method::FastDual, Method::DllmCache}) {
        DiffusionParams p  = base_params(meth);
        Run             a  = run(*m, {p1}, p);
        Run             b  = run(*m, {p2}, p);
        Run             ab = run(*m, {p1, p2}, p);
        INFO(method_name(meth));
        CHECK(ab.result.sequences[0].token_ids == a.result.sequences[0].token_ids);
        CHECK(ab.result.sequences[1].token_ids == b.result.sequences[0].token_ids);
    }
}

TEST_CASE("bad parameters and prompts give one clear error", "[params]") {
    auto    m = Model::load(make_tiny_checkpoint(Family::LLaDA, DType::F32, 1, 37).string());
    Session s(*m);
    const auto      prompt = random_prompt(m->config(), 8, 1);
    DiffusionParams p      = base_params(Method::DyLLM);
    p.steps                = 5;  // does not divide 16
    CHECK_THROWS_WITH(s.start({prompt}, p), Catch::Contains("steps") && Catch::Contains("divide"));
    p       = base_params(Method::DyLLM);
    p.tau   = NAN;
    CHECK_NOTHROW(s.start({prompt}, p));  // NaN = family default
    p.tau = INFINITY;
    CHECK_THROWS_WITH(s.start({prompt}, p), Catch::Contains("tau"));
    p = base_params(Method::DyLLM);
    CHECK_THROWS_WITH(s.start({{}}, p), Catch::Contains("empty"));
    CHECK_THROWS_WITH(s.start({{m->config().n_vocab + 5}}, p), Catch::Contains("outside the vocabulary"));
    std::vector<int32_t> huge(size_t(m->config().max_position), 1);
    CHECK_THROWS_WITH(s.start({huge}, p), Catch::Contains("too long"));
}
