// d2Cache (engine/methods/d2_cache.cpp) on tiny random checkpoints of both families: its schedule, the dual selection
// of query rows, the head-mean attention probabilities it composes, both candidate policies, and the dense decode it
// becomes when the rollout share is 1.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "engine/engine.h"
#include "engine/forward.h"
#include "engine/methods/method.h"
#include "support/tiny_models.h"
#include "test_method_steps.h"

using namespace dyllm;
using dyllm::test::make_tiny_checkpoint;
using dyllm::test::random_prompt;
using dyllm::test::run_one;

namespace {

DiffusionParams d2_params() {
    DiffusionParams p;
    p.method       = Method::D2Cache;
    p.gen_length   = 16;
    p.steps        = 16;
    p.block_length = 8;
    p.ignore_eos   = true;
    p.d2_k         = 3;
    return p;
}

}  // namespace

TEST_CASE("d2cache: step 1 dense, then fewer rows; deterministic; every response position decoded", "[d2][schedule]") {
    const Family fam    = GENERATE(Family::LLaDA, Family::Dream);
    auto         m      = Model::load(make_tiny_checkpoint(fam, DType::F32, 1, 5).string(), BackendKind::Cpu, 1);
    const auto   prompt = random_prompt(m->config(), 10, 4);
    for (const bool paper : {false, true}) {
        DiffusionParams p        = d2_params();
        p.d2_update_prior        = paper;
        p.d2_queried_only        = paper;
        const GenerationResult a = run_one(*m, prompt, p), b = run_one(*m, prompt, p);
        INFO((paper ? "paper" : "authors'"));
        REQUIRE(a.steps.size() == 16);
        CHECK(a.steps[0].kind == StepKind::D2Full);
        int32_t fewer = 0;
        for (size_t i = 1; i < a.steps.size(); ++i) {
            CHECK(a.steps[i].kind == StepKind::D2Cached);
            fewer += a.steps[i].layers[0].query_rows < 26;
        }
        CHECK(fewer > 0);
        CHECK(a.sequences[0].token_ids == b.sequences[0].token_ids);
        CHECK(a.sequences[0].unmask_step == b.sequences[0].unmask_step);
        CHECK(a.total_flops == b.total_flops);
        for (int32_t t : a.sequences[0].token_ids) CHECK(t != m->config().mask_id);
    }
}

TEST_CASE("d2cache with rollout share 1 is the original decode", "[d2][exact]") {
    const Family    fam      = GENERATE(Family::LLaDA, Family::Dream);
    auto            m        = Model::load(make_tiny_checkpoint(fam, DType::F32, 1, 7).string(), BackendKind::Cpu, 1);
    const auto      prompt   = random_prompt(m->config(), 12, 9);
    DiffusionParams p        = d2_params();
    p.d2_rollout_p           = 1.f;  // every row not otherwise chosen is taken by the rollout: each step is dense
    DiffusionParams po       = d2_params();
    po.method                = Method::Original;
    const GenerationResult d = run_one(*m, prompt, p), o = run_one(*m, prompt, po);
    // The same dense layers over the same rows in the same order: the same logits bit for bit, hence the same decode.
    CHECK(d.sequences[0].token_ids == o.sequences[0].token_ids);
    CHECK(d.sequences[0].unmask_step == o.sequences[0].unmask_step);
    for (const StepRecord& s : d.steps) CHECK(s.layers[0].query_rows == 28);
    // On top of the dense FLOPs: the probabilities and the rollout (and step 1's prior through the head).
    CHECK(d.total_flops > o.total_flops);
}

TEST_CASE("d2cache queries the block's best masked positions, the last step's decoded ones and rollout rows",
          "[d2][select]") {
    const Family       fam = GENERATE(Family::LLaDA, Family::Dream);
    auto               m   = Model::load(make_tiny_checkpoint(fam).string(), BackendKind::Cpu, 1);
    const ModelConfig& cfg = m->config();
    const int32_t      P = 8, R = 16, N = P + R;
    DiffusionParams    p = d2_params();
    p.gen_length         = R;
    p.steps              = R;
    p.d2_k               = 3;
    p.d2_rollout_p       = 0.f;  // the rollout adds its single most important row
    test::MethodSteps s(*m, make_method(Method::D2Cache, cfg, p), P, R);
    BatchLayout&      lay  = s.lay;
    const RowSet&     q    = s.q;
    const auto        step = [&](int t, int32_t unmasked, std::vector<int32_t> last, std::vector<int32_t> masked) {
        return s.step(t, unmasked, std::move(last), std::move(masked));
    };
    std::vector<int32_t> all(static_cast<size_t>(R));
    std::iota(all.begin(), all.end(), 0);
    CHECK(step(1, 0, {}, all) == StepKind::D2Full);
    CHECK(q.size() == size_t(N));
    lay.tokens[size_t(P + 2)] = 5;
    all.erase(all.begin() + 2);
    CHECK(step(2, 1, {2}, all) == StepKind::D2Cached);
    const std::set<int32_t> rows(q.rows.begin(), q.rows.end());
    // The decoded position's row, k = 3 masked positions of the first block (searched to the end of the block holding
    // the third masked position; the block's bias puts it first) and, with rollout share 0, the one most important
    // other row. LLaDA reads each masked position's own row; Dream the row before (which may be the decoded row or the
    // rollout's, and the last prompt row is set by whether position 0 was chosen, after the rollout's pick).
    CHECK(rows.count(P + 2) == 1);
    if (fam == Family::LLaDA) {
        CHECK(q.size() == 5);
        int32_t in_block = 0;
        for (int32_t r : all) in_block += r < 8 && rows.count(P + r) == 1;
        CHECK(in_block >= 3);
    } else {
        CHECK((q.size() >= 3 && q.size() <= 5));
    }
}

TEST_CASE("attention_probs: head-mean softmax rows sum to 1 and do not depend on the other query rows", "[d2][probs]") {
    const Family       fam = GENERATE(Family::LLaDA, Family::Dream);
    auto               m   = Model::load(make_tiny_checkpoint(fam).string(), BackendKind::Cpu, 1);
    const ModelConfig& cfg = m->config();
    Backend&           be  = m->backend();
    BatchLayout        lay;
    lay.cu         = {0, 9, 20};
    lay.prompt_len = {4, 6};
    lay.tokens     = random_prompt(cfg, 20, 11);
    Forward    fwd(cfg, m->weights(), be, nullptr);
    LayerCache c;
    c.k                = be.alloc(be.cache_dtype(), 20, cfg.kv_dim());
    c.v                = be.alloc(be.cache_dtype(), 20, cfg.kv_dim());
    const RowSet every = all_rows(lay);
    fwd.begin_step(lay);
    Tensor             h = fwd.embed(lay, every);
    std::vector<float> probs_all;
    fwd.layer_dense(0, h, lay, every, c, {.attn_probs = &probs_all});
    REQUIRE(probs_all.size() == size_t(9 * 9 + 11 * 11));
    // Each row is a mean of softmaxes: it sums to 1 up to fp32 rounding of its terms (at most 11 of them).
    size_t o = 0;
    for (size_t i = 0; i < every.size(); ++i) {
        const int32_t len = lay.seq_len(every.seq[i]);
        double        sum = 0;
        for (int32_t j = 0; j < len; ++j) {
            CHECK(probs_all[o + size_t(j)] >= 0.f);
            sum += probs_all[o + size_t(j)];
        }
        CHECK(std::fabs(sum - 1.0) < 1e-5);
        o += size_t(len);
    }
    // Rows 2 and 15 alone, with the caches the dense pass filled: their probabilities come from their own query and
    // the same keys, computed on the host (fp64 softmax); only their Q differs by GEMM summation order over fewer rows
    // (fp32, ~1e-6 relative), so 1e-5 bounds it.
    RowSet two;
    two.push(2, 0, 2);
    two.push(15, 1, 6);
    fwd.begin_step(lay);
    Tensor     g = fwd.embed(lay, two);
    LayerCache c2;
    c2.k = be.alloc(be.cache_dtype(), 20, cfg.kv_dim());
    c2.v = be.alloc(be.cache_dtype(), 20, cfg.kv_dim());
    std::vector<float> kh(size_t(20 * cfg.kv_dim()));
    be.download(c.k, kh.data());
    be.upload(c2.k, kh.data());
    be.download(c.v, kh.data());
    be.upload(c2.v, kh.data());
    std::vector<float> probs_two;
    fwd.layer_dense(0, g, lay, two, c2, {.attn_probs = &probs_two});
    REQUIRE(probs_two.size() == size_t(9 + 11));
    for (int32_t j = 0; j < 9; ++j) CHECK(std::fabs(probs_two[size_t(j)] - probs_all[size_t(2 * 9 + j)]) < 1e-5);
    for (int32_t j = 0; j < 11; ++j)
        CHECK(std::fabs(probs_two[size_t(9 + j)] - probs_all[size_t(81 + 6 * 11 + j)]) < 1e-5);
}
