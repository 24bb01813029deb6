// dKV-Cache (engine/methods/dkv_cache.cpp) on tiny random checkpoints of both families: schedules, query rows,
// determinism, the delayed cache against a dense recompute, and Greedy's replayable unmasking order.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "engine/engine.h"
#include "engine/forward.h"
#include "engine/methods/method.h"
#include "engine/sampler.h"
#include "support/tiny_models.h"
#include "test_method_steps.h"

using namespace dyllm;
using dyllm::test::make_tiny_checkpoint;
using dyllm::test::random_prompt;

namespace {

DiffusionParams dkv_params(int refresh, Method m = Method::DkvDecode) {
    DiffusionParams p;
    p.method       = m;
    p.gen_length   = 16;
    p.steps        = 16;
    p.block_length = 8;
    p.ignore_eos   = true;
    p.dkv_refresh  = refresh;
    return p;
}

std::vector<float> to_host(Backend& be, const TensorView& t) {
    std::vector<float> v(size_t(t.rows() * t.cols()));
    be.download(t, v.data());
    return v;
}

}  // namespace

TEST_CASE("dkv-decode: dense at a block's first two steps and every refresh-th, the rest query masked + just decoded",
          "[dkv][schedule]") {
    const Family fam = GENERATE(Family::LLaDA, Family::Dream);
    auto         m   = Model::load(make_tiny_checkpoint(fam).string(), BackendKind::Cpu, 1);
    Session      s(*m);
    s.start({random_prompt(m->config(), 10, 4)}, dkv_params(3));
    s.run();
    const GenerationResult r = s.result();
    REQUIRE(r.steps.size() == 16);
    std::string kinds;
    for (const auto& rec : r.steps) kinds += rec.kind == StepKind::DkvRefresh ? 'R' : 'C';
    // Block-local steps i = 0..7 per block of 8 (n_u = 1): dense at i = 0, 1, 3, 6 (i % 3 == 0).
    CHECK(kinds == "RRCRCCRCRRCRCCRC");
    for (const auto& rec : r.steps) {
        const int32_t masked = 16 - (rec.step - 1);  // before the step
        // Queried: the masked positions and the one decoded by the previous step (10 + 16 rows when dense); Dream also
        // queries the row before each masked position, which adds the decoded ones among them.
        const bool    dense = rec.kind == StepKind::DkvRefresh;
        const int32_t least = dense ? 26 : masked + 1;
        INFO("step " << rec.step);
        for (const auto& a : rec.layers) {
            if (fam == Family::LLaDA || dense)
                CHECK(a.query_rows == least);
            else
                CHECK((a.query_rows >= least && a.query_rows <= 26));
        }
    }
}

TEST_CASE("dkv-decode decodes are deterministic and refresh 1 is the original decode", "[dkv][exact]") {
    const Family fam    = GENERATE(Family::LLaDA, Family::Dream);
    auto         m      = Model::load(make_tiny_checkpoint(fam, DType::F32, 1, 7).string(), BackendKind::Cpu, 1);
    const auto   prompt = random_prompt(m->config(), 12, 9);
    auto         run    = [&](const DiffusionParams& p) {
        Session s(*m);
        s.start({prompt}, p);
        s.run();
        return s.result();
    };
    const GenerationResult a = run(dkv_params(4)), b = run(dkv_params(4));
    CHECK(a.sequences[0].token_ids == b.sequences[0].token_ids);
    CHECK(a.sequences[0].unmask_step == b.sequences[0].unmask_step);
    CHECK(a.total_flops == b.total_flops);
    DiffusionParams po       = dkv_params(1);
    po.method                = Method::Original;
    const GenerationResult o = run(po), d1 = run(dkv_params(1));
    CHECK(d1.sequences[0].token_ids == o.sequences[0].token_ids);
    CHECK(d1.total_flops == o.total_flops);  // every step dense: the same ops over the same rows
    CHECK(a.total_flops < o.total_flops);
}

TEST_CASE("dkv-decode's delayed cache equals a dense recompute at layer 0 and keeps unqueried rows", "[dkv][cache]") {
    const Family       fam = GENERATE(Family::LLaDA, Family::Dream);
    auto               m   = Model::load(make_tiny_checkpoint(fam).string(), BackendKind::Cpu, 1);
    const ModelConfig& cfg = m->config();
    Backend&           be  = m->backend();
    const int32_t      P = 8, R = 8, N = P + R;
    DiffusionParams    p = dkv_params(4);
    p.gen_length         = R;
    p.steps              = R;
    test::MethodSteps        s(*m, make_method(Method::DkvDecode, cfg, p), P, R);
    BatchLayout&             lay    = s.lay;
    std::vector<LayerCache>& caches = s.caches;
    const RowSet&            q      = s.q;
    Forward&                 fwd    = s.fwd;
    const auto step = [&](int t, int32_t unmasked, std::vector<int32_t> last, std::vector<int32_t> masked) {
        return s.step(t, unmasked, std::move(last), std::move(masked));
    };
    const auto decode = [&](int32_t r) { lay.tokens[size_t(P + r)] = 5 + r; };
    CHECK(step(1, 0, {}, {0, 1, 2, 3, 4, 5, 6, 7}) == StepKind::DkvRefresh);
    decode(2);
    decode(5);
    CHECK(step(2, 2, {2, 5}, {0, 1, 3, 4, 6, 7}) == StepKind::DkvRefresh);
    std::vector<std::vector<float>> k_before, v_before;
    for (const LayerCache& c : caches) {
        k_before.push_back(to_host(be, c.k));
        v_before.push_back(to_host(be, c.v));
    }
    decode(0);
    CHECK(step(3, 3, {0}, {1, 3, 4, 6, 7}) == StepKind::DkvCached);
    std::vector<int32_t> queried(size_t(N), 0);
    for (int32_t row : q.rows) queried[size_t(row)] = 1;
    // Rows 2 and 5 (decoded two steps back) and the prompt are read from the cache; Dream queries them too, as the
    // rows before masked positions 3 and 6, whose shifted logits they hold.
    for (int32_t r : {2, 5}) CHECK(queried[size_t(P + r)] == (fam == Family::Dream ? 1 : 0));
    for (int32_t r : {0, 1, 3, 4, 6, 7}) CHECK(queried[size_t(P + r)] == 1);
    for (int32_t row = 0; row < P; ++row) CHECK(queried[size_t(row)] == 0);
    // Unqueried rows keep their cached K/V at every layer, bit for bit.
    const int64_t kd = cfg.kv_dim();
    for (int l = 0; l < cfg.n_layer; ++l) {
        const std::vector<float> k = to_host(be, caches[size_t(l)].k), v = to_host(be, caches[size_t(l)].v);
        for (int32_t row = 0; row < N; ++row)
            if (!queried[size_t(row)])
                for (int64_t j = 0; j < kd; ++j) {
                    CHECK(k[size_t(row * kd + j)] == k_before[size_t(l)][size_t(row * kd + j)]);
                    CHECK(v[size_t(row * kd + j)] == v_before[size_t(l)][size_t(row * kd + j)]);
                }
    }
    // Layer 0's K/V depend only on each row's token and position, so the delayed cache is exact there: it equals a
    // dense forward of the current canvas up to GEMM summation order over different row counts (fp32: ~1e-6
    // relative; 1e-4 of the scale bounds it).
    LayerCache dense;
    dense.k            = be.alloc(be.cache_dtype(), N, kd);
    dense.v            = be.alloc(be.cache_dtype(), N, kd);
    const RowSet every = all_rows(lay);
    fwd.begin_step(lay);
    Tensor h = fwd.embed(lay, every);
    fwd.layer_dense(0, h, lay, every, dense);
    const std::vector<float> kc = to_host(be, caches[0].k), kr = to_host(be, dense.k);
    const std::vector<float> vc = to_host(be, caches[0].v), vr = to_host(be, dense.v);
    double                   dk = 0, dv = 0, scale = 1;
    for (size_t i = 0; i < kc.size(); ++i) {
        dk    = std::max(dk, std::fabs(double(kc[i]) - double(kr[i])));
        dv    = std::max(dv, std::fabs(double(vc[i]) - double(vr[i])));
        scale = std::max({scale, std::fabs(double(kr[i])), std::fabs(double(vr[i]))});
    }
    CHECK(dk <= 1e-4 * scale);
    CHECK(dv <= 1e-4 * scale);
}

TEST_CASE(
    "dkv-greedy unmasks each block in the seed's order and queries only what it unmasks, the last step's "
    "and the window",
    "[dkv][greedy]") {
    const Family    fam = GENERATE(Family::LLaDA, Family::Dream);
    const int       w   = GENERATE(0, 2);
    auto            m   = Model::load(make_tiny_checkpoint(fam).string(), BackendKind::Cpu, 1);
    DiffusionParams p   = dkv_params(3, Method::DkvGreedy);
    p.dkv_window        = w;
    p.seed              = 11;
    Session s(*m);
    s.start({random_prompt(m->config(), 10, 4), random_prompt(m->config(), 7, 5)}, p);
    s.run();
    const GenerationResult r = s.result();
    REQUIRE(r.steps.size() == 16);
    std::string kinds;
    for (const auto& rec : r.steps) kinds += rec.kind == StepKind::DkvRefresh ? 'R' : 'C';
    CHECK(kinds == "RCCRCCRCRCCRCCRC");  // block-local i % 3 == 0, no second dense step
    // The order is the seed's, per sequence and block, whatever the logits: position order[k] of block blk is
    // unmasked at step 8 blk + k + 1 (n_u = 1).
    std::vector<int32_t> order;
    for (int32_t id = 0; id < 2; ++id)
        for (int32_t blk = 0; blk < 2; ++blk) {
            random_block_order(p.seed, id, blk, 8 * blk, 8 * blk + 8, order);
            for (int32_t k = 0; k < 8; ++k)
                CHECK(r.sequences[size_t(id)].unmask_step[size_t(order[size_t(k)])] == 8 * blk + k + 1);
        }
    CHECK(r.sequences[0].unmask_step != r.sequences[1].unmask_step);  // each sequence its own order
    for (const auto& rec : r.steps) {
        if (rec.kind == StepKind::DkvRefresh) continue;
        INFO("step " << rec.step);
        // Per sequence: the position it unmasks, the one unmasked the step before, up to w masked neighbours, and
        // for Dream up to one row before each scored position.
        const int32_t most = 2 * (2 + w + (fam == Family::Dream ? 1 : 0));
        for (const auto& a : rec.layers) CHECK((a.query_rows >= 4 && a.query_rows <= most));
        if (fam == Family::LLaDA && w == 0)
            for (const auto& a : rec.layers) CHECK(a.query_rows == 4);
    }
}

TEST_CASE("random block orders are permutations fixed by seed, sequence and block", "[dkv][greedy]") {
    std::vector<int32_t> a, b, c;
    random_block_order(7, 0, 1, 8, 16, a);
    random_block_order(7, 0, 1, 8, 16, b);
    random_block_order(7, 1, 1, 8, 16, c);
    CHECK(a == b);
    CHECK(a != c);
    std::vector<int32_t> sorted = a;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == std::vector<int32_t>{8, 9, 10, 11, 12, 13, 14, 15});
    // The next positions are the first still-masked ones of the order, ascending.
    std::vector<int32_t>       scratch, next;
    const std::vector<int32_t> masked = {a[1], a[3], a[5], a[6], a[7]};
    std::vector<int32_t>       sm     = masked;
    std::sort(sm.begin(), sm.end());
    random_order_next(7, 0, 16, 8, 11, sm, 2, scratch, next);
    std::vector<int32_t> want = {a[1], a[3]};
    std::sort(want.begin(), want.end());
    CHECK(next == want);
}
