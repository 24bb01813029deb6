// The profiler side of app/model without a window: the dense/cached roofline split, the sgemm probe through the CPU
// backend, op names and GEMM shapes from the op stream, per-op statistics, the tau slider scale and the sweep's
// Pareto front.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "app/model/roofline.h"
#include "app/model/sgemm_probe.h"
#include "engine/backend.h"

using namespace dyllm;
using namespace dyllm::app;

namespace {

StepRecord rec(StepKind k, double flops, double seconds) {
    StepRecord r;
    r.kind = k, r.flops = flops, r.seconds = seconds;
    return r;
}

}  // namespace

TEST_CASE("roofline: steps split into dense and cached by kind", "[app][profile]") {
    const std::vector<StepRecord> steps = {rec(StepKind::Full, 8e9, 1.0), rec(StepKind::SparseResponse, 1e9, 0.5),
                                           rec(StepKind::BlockRefresh, 4e9, 0.5), rec(StepKind::BlockCached, 1e9, 0.25),
                                           rec(StepKind::CacheRefresh, 2e9, 0.5), rec(StepKind::CachePartial, 1e9, 0.25)};
    const RooflineSplit sp = split_steps(steps);
    CHECK(sp.all.steps == 6);
    CHECK(sp.dense.steps == 3);
    CHECK(sp.cached.steps == 3);
    CHECK(sp.dense.flops == 14e9);
    CHECK(sp.dense.seconds == 2.0);
    CHECK(sp.dense.gflops_per_s() == Approx(7.0));
    CHECK(sp.cached.gflops_per_s() == Approx(3.0));
    CHECK(sp.all.gflops_per_s() == Approx(17.0 / 3.0));
    CHECK(percent_of(50, 200) == Approx(25.0));
    CHECK(percent_of(50, 0) == 0.0);  // no peak measured: no share, not inf
    CHECK(split_steps({}).all.gflops_per_s() == 0.0);
    CHECK_FALSE(is_dense_step(StepKind::SparseFullQuery));  // every row a query, but K/V and FFN from caches
}

TEST_CASE("sgemm probe: the model's GEMM shapes, timed through the CPU backend", "[app][profile]") {
    ModelConfig cfg;
    cfg.n_embd = 64, cfg.n_head = 4, cfg.n_kv_head = 2, cfg.head_dim = 16, cfg.n_ff = 96;
    const auto shapes = model_gemm_shapes(cfg, 40);
    REQUIRE(shapes.size() == 3);
    CHECK(shapes[0].n == 64);  // q_dim = n_head x head_dim
    CHECK(shapes[1].n == 96);
    CHECK(shapes[2].k == 96);
    CHECK(shapes[1].flops() == 2.0 * 40 * 96 * 64);
    auto be = make_backend(BackendKind::Cpu, 1);
    // 1 ms per shape: enough for the >= 3 calls the median needs; the rate's size is the bench's business.
    const SgemmProbe p = measure_sgemm(*be, shapes, 0.001);
    REQUIRE(p.shapes.size() == 3);
    double fl = 0, s = 0;
    for (const auto& g : p.shapes) {
        CHECK(g.seconds > 0);
        CHECK(g.gflops_per_s() > 0);
        fl += g.shape.flops(), s += g.seconds;
    }
    CHECK(p.gflops_per_s == Approx(fl / s * 1e-9));
    const std::vector<GemmShape> bad = {{"empty", 0, 4, 4}};
    CHECK_THROWS_WITH(measure_sgemm(*be, bad, 0.001), Catch::Contains("shape 'empty'"));
}
