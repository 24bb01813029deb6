// The profiler side of app/model without a window: the dense/cached roofline split, the sgemm probe through the CPU
// backend, op names and GEMM shapes from the op stream, per-op statistics (with preempted samples), per-step weight
// GB/s, CUPTI kernels joined to their ops, the tau slider scale and the sweep's Pareto front.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "app/model/axis_ticks.h"
#include "app/model/core_latency.h"
#include "app/model/kernel_join.h"
#include "app/model/layout.h"
#include "app/model/op_names.h"
#include "app/model/op_preempt.h"
#include "app/model/op_stats.h"
#include "app/model/roofline.h"
#include "app/model/tau_scale.h"
#include "app/model/tau_sweep.h"
#include "app/model/sgemm_probe.h"
#include "app/model/step_rates.h"
#include "engine/backend.h"

using namespace dyllm;
using namespace dyllm::app;

namespace {

StepRecord rec(StepKind k, double flops, double seconds) {
    StepRecord r;
    r.kind    = k;
    r.flops   = flops;
    r.seconds = seconds;
    return r;
}

// A GEMM op as engine/forward.cpp times it: flops = 2 m n k.
OpTiming gemm(int layer, OpClass c, int rows, int n, int k, int64_t dur_ns = 1000) {
    OpTiming o;
    o.layer  = layer;
    o.op     = c;
    o.rows   = rows;
    o.flops  = 2.0 * rows * n * k;
    o.dur_ns = dur_ns;
    o.bytes  = 4.0 * (double(n) * k + double(rows) * k + double(rows) * n);
    return o;
}
OpTiming plain(int layer, OpClass c, int rows, int64_t dur_ns = 1000) {
    OpTiming o;
    o.layer  = layer;
    o.op     = c;
    o.rows   = rows;
    o.dur_ns = dur_ns;
    return o;
}

std::vector<OpName> names_of(const std::vector<NamedOp>& v) {
    std::vector<OpName> r;
    for (const auto& n : v) r.push_back(n.name);
    return r;
}

// n_embd 64, q_dim 64, kv_dim 32 (GQA), n_ff 96, vocab 300.
constexpr int kD = 64, kKv = 32, kFf = 96, kVocab = 300;

// One dense layer as Forward::layer_dense emits it, then the head.
std::vector<OpTiming> dense_layer_ops(int l, int rows) {
    return {plain(l, OpClass::Norm, rows),          gemm(l, OpClass::Qkv, rows, kD, kD),
            gemm(l, OpClass::Qkv, rows, kKv, kD),   gemm(l, OpClass::Qkv, rows, kKv, kD),
            plain(l, OpClass::Rope, rows),          plain(l, OpClass::GatherScatter, rows),
            plain(l, OpClass::GatherScatter, rows), plain(l, OpClass::AttnExact, rows),
            gemm(l, OpClass::OProj, rows, kD, kD),  plain(l, OpClass::Norm, rows),
            gemm(l, OpClass::Ffn, rows, kFf, kD),   gemm(l, OpClass::Ffn, rows, kFf, kD),
            plain(l, OpClass::Ffn, rows),           gemm(l, OpClass::Ffn, rows, kD, kFf)};
}

}  // namespace

TEST_CASE("op names: the model's names and GEMM shapes from the op order", "[app][profile]") {
    SECTION("dense layers and the head") {
        std::vector<OpTiming> ops = {plain(-1, OpClass::Embed, 10)};
        for (int l = 0; l < 2; ++l)
            for (const auto& o : dense_layer_ops(l, 10)) ops.push_back(o);
        ops.push_back(gemm(-1, OpClass::LmHead, 4, kVocab, kD));
        const auto n                    = name_ops(ops, kD);
        using N                         = OpName;
        const std::vector<OpName> layer = {N::Norm,          N::Q,         N::K, N::V,    N::Rope, N::GatherScatter,
                                           N::GatherScatter, N::AttnExact, N::O, N::Norm, N::Gate, N::Up,
                                           N::SiluMul,       N::Down};
        std::vector<OpName>       want  = {N::Embed};
        for (int l = 0; l < 2; ++l) want.insert(want.end(), layer.begin(), layer.end());
        want.push_back(N::LmHead);
        CHECK(names_of(n) == want);
        // Shapes: M = rows; the side that is not n_embd from the FLOPs.
        CHECK((n[2].m == 10 && n[2].n == kD && n[2].k == kD));  // q
        CHECK((n[3].n == kKv && n[3].k == kD));                 // k (GQA: narrower)
        CHECK((n[9].n == kD && n[9].k == kD));                  // o
        CHECK((n[11].n == kFf && n[11].k == kD));               // gate
        CHECK((n[14].n == kD && n[14].k == kFf));               // down
        CHECK((n.back().m == 4 && n.back().n == kVocab && n.back().k == kD));
        CHECK_FALSE(n[5].is_gemm());   // rope
        CHECK_FALSE(n[13].is_gemm());  // silu_mul
        // Without n_embd: the names stay, the shapes go.
        const auto bare = name_ops(ops, 0);
        CHECK(names_of(bare) == want);
        CHECK_FALSE(bare[2].is_gemm());
    }
    SECTION("dyllm sparse layer: q of the query rows, then k, v of the salient rows") {
        const std::vector<OpTiming> ops = {
            plain(0, OpClass::Norm, 4), gemm(0, OpClass::Qkv, 4, kD, kD),  plain(0, OpClass::Rope, 4),
            plain(0, OpClass::Norm, 2), gemm(0, OpClass::Qkv, 2, kKv, kD), gemm(0, OpClass::Qkv, 2, kKv, kD),
            plain(0, OpClass::Rope, 2), plain(0, OpClass::AttnApprox, 4),  gemm(0, OpClass::OProj, 4, kD, kD)};
        const auto n = name_ops(ops, kD);
        CHECK(n[1].name == OpName::Q);
        CHECK(n[4].name == OpName::K);
        CHECK(n[5].name == OpName::V);
        CHECK(n[4].m == 2);
        CHECK(n[7].name == OpName::AttnApprox);
    }
    SECTION("dLLM-Cache without v: q, k, then a separate v") {
        const std::vector<OpTiming> ops = {gemm(1, OpClass::Qkv, 4, kD, kD), gemm(1, OpClass::Qkv, 4, kKv, kD),
                                           plain(1, OpClass::Rope, 4), gemm(1, OpClass::Qkv, 3, kKv, kD)};
        CHECK(names_of(name_ops(ops, kD)) == std::vector<OpName>{OpName::Q, OpName::K, OpName::Rope, OpName::V});
    }
    for (size_t i = 0; i < kOpNames; ++i) CHECK(std::string(op_name_text(OpName(i))) != "?");
    CHECK(op_name_class(OpName::Down) == OpClass::Ffn);
    CHECK(op_name_class(OpName::V) == OpClass::Qkv);
}

TEST_CASE("op stats: count, total, mean, median, min, max, share and rates per op, sortable and filterable",
          "[app][profile]") {
    RunHistory h;
    RunBegin   rb;
    rb.method         = "original";
    rb.n_layer        = 2;
    rb.n_seq          = 1;
    rb.gen_length     = 4;
    rb.steps          = 3;
    rb.prompt_lengths = {6};
    rb.env            = {{"n_embd", std::to_string(kD)}};
    h.apply(rb);
    // Three steps of two dense layers (every op 1 us); the q projection of layer 1 takes 3, 4 and 20 us.
    const int64_t q1_ns[3] = {3000, 4000, 20000};
    for (int k = 1; k <= 3; ++k) {
        StepBegin sb;
        sb.step = k;
        h.apply(sb);
        for (int l = 0; l < 2; ++l)
            for (OpTiming o : dense_layer_ops(l, 10)) {
                o.step = k;
                if (l == 1 && o.op == OpClass::Qkv && o.flops == 2.0 * 10 * kD * kD) o.dur_ns = q1_ns[k - 1];
                h.apply(o);
            }
        StepEnd se;
        se.step    = k;
        se.wall_ns = 1'000'000;
        h.apply(se);
    }
    REQUIRE(run_n_embd(h) == kD);

    auto find = [](const std::vector<OpStat>& v, const std::string& label) -> const OpStat* {
        for (const auto& s : v)
            if (s.label == label) return &s;
        return nullptr;
    };
    const auto    by_layer = op_stats(h, 1, 3, true);
    const OpStat* q1       = find(by_layer, "q L1");
    REQUIRE(q1);
    CHECK(q1->count == 3);
    CHECK(q1->total_s == Approx(27e-6));
    CHECK(q1->mean_s == Approx(9e-6));
    CHECK(q1->median_s == Approx(4e-6));
    CHECK(q1->min_s == Approx(3e-6));
    CHECK(q1->max_s == Approx(20e-6));
    CHECK((q1->m == 10 && q1->n == kD && q1->k == kD));
    // GFLOP/s from the engine's FLOPs over the summed time: 3 x 2*10*64*64 FLOPs in 27 us.
    CHECK(q1->gflops_per_s() == Approx(3 * 2.0 * 10 * kD * kD / 27e-6 * 1e-9));
    CHECK(q1->gbytes_per_s() > 0);
    double share = 0;
    for (const auto& s : by_layer) share += s.share;
    CHECK(share == Approx(1.0));

    // Grouped by name: both layers' q (3 x 1 us + 27 us); one step only; a range past the end is clamped.
    const auto by_name = op_stats(h, 1, 3, false);
    REQUIRE(find(by_name, "q"));
    CHECK(find(by_name, "q")->count == 6);
    CHECK(find(by_name, "q")->total_s == Approx(30e-6));
    CHECK(find(by_name, "q L1") == nullptr);
    CHECK(find(op_stats(h, 3, 99, false), "q")->count == 2);
    CHECK(op_stats(h, 5, 9, false).empty());

    auto sorted = by_name;
    sort_stats(sorted, StatColumn::Total, false);
    for (size_t i = 1; i < sorted.size(); ++i) CHECK(sorted[i - 1].total_s >= sorted[i].total_s);
    CHECK(sorted.front().label == "q");  // the slow layer-1 q dominates
    sort_stats(sorted, StatColumn::Label, true);
    CHECK(sorted.front().label == "norm");  // model order: embed is absent, norm is the first op of a layer
    sort_stats(sorted, StatColumn::Max, true);
    CHECK(sorted.back().label == "q");

    int shown = 0;
    for (const auto& s : by_name) shown += stat_matches(s, "ATTN");
    CHECK(shown == 1);  // attn_exact only
    CHECK(stat_matches(by_name.front(), ""));
}

TEST_CASE("roofline: steps split into dense and cached by kind", "[app][profile]") {
    const std::vector<StepRecord> steps = {
        rec(StepKind::Full, 8e9, 1.0),         rec(StepKind::SparseResponse, 1e9, 0.5),
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
    cfg.n_embd        = 64;
    cfg.n_head        = 4;
    cfg.n_kv_head     = 2;
    cfg.head_dim      = 16;
    cfg.n_ff          = 96;
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
        fl += g.shape.flops();
        s += g.seconds;
    }
    CHECK(p.gflops_per_s == Approx(fl / s * 1e-9));
    const std::vector<GemmShape> bad = {{"empty", 0, 4, 4}};
    CHECK_THROWS_WITH(measure_sgemm(*be, bad, 0.001), Catch::Contains("shape 'empty'"));

    // Measured again on the same prepared operands (the bench re-measures between repetitions): same shapes, in order.
    GemmProbe probe(*be, shapes);
    for (int i = 0; i < 2; ++i) {
        const SgemmProbe again = probe.measure(0.0, 1);
        REQUIRE(again.shapes.size() == 3);
        for (size_t j = 0; j < 3; ++j) {
            CHECK(again.shapes[j].shape.name == shapes[j].name);
            CHECK(again.shapes[j].seconds > 0);
        }
        CHECK(again.gflops_per_s > 0);
    }
    CHECK_THROWS_WITH(GemmProbe(*be, bad), Catch::Contains("shape 'empty'"));

    // With plain weights (the system BLAS's sgemm on the CPU, `dyllm bench`'s blas_sgemm_gflops): the same shapes,
    // nothing prepared, so nothing to release when it goes.
    GemmProbe        plain(*be, shapes, ProbeWeights::Plain);
    const SgemmProbe p2 = plain.measure(0.0, 1);
    REQUIRE(p2.shapes.size() == 3);
    for (size_t j = 0; j < 3; ++j) CHECK(p2.shapes[j].shape.flops() == shapes[j].flops());
    CHECK(p2.gflops_per_s > 0);
    CHECK_THROWS_WITH(GemmProbe(*be, bad, ProbeWeights::Plain), Catch::Contains("shape 'empty'"));
}

TEST_CASE("thread scaling: the probe's speed-up over one thread, and when the threads share cores", "[app][profile]") {
    CHECK(ThreadScaling{2, 220, 425}.speedup() == Approx(425.0 / 220));
    CHECK_FALSE(ThreadScaling{2, 220, 425}.shared_cores());  // two real cores
    CHECK(ThreadScaling{2, 220, 240}.shared_cores());        // two hyperthreads of one core, or a busy host
    CHECK(ThreadScaling{4, 100, 250}.shared_cores());        // 2.5x on 4 threads
    CHECK_FALSE(ThreadScaling{4, 100, 300}.shared_cores());
    CHECK_FALSE(ThreadScaling{1, 220, 220}.shared_cores());  // one thread: nothing to share
    CHECK_FALSE(ThreadScaling{2, 0, 240}.shared_cores());    // no one-thread rate measured
    CHECK(ThreadScaling{2, 0, 240}.speedup() == 0.0);
}

TEST_CASE("core latency: two threads pass a cache line, or say they could not", "[app][profile]") {
    const CoreLatency c = measure_core_latency(2000, 3, 50.0);
    if (c.measured) {
        // A one-way trip between cores is tens to hundreds of nanoseconds; below 1 ns the ping-pong did not happen,
        // and 50 ms per batch of 2000 round trips bounds it at 12.5 us.
        CHECK(c.one_way_ns > 1.0);
        CHECK(c.one_way_ns < 12500.0);
        CHECK(c.far() == (c.one_way_ns >= kFarCoresNs));
    } else {
        CHECK(c.one_way_ns == 0.0);
        CHECK_FALSE(c.far());
    }
    // Nothing to measure: no round trip asked for.
    CHECK_FALSE(measure_core_latency(0, 3, 50.0).measured);
    CHECK_FALSE(measure_core_latency(10, 0, 50.0).measured);
    // A batch that cannot finish in its time (10 million round trips in 1 ms) ends as not measured, and returns.
    const CoreLatency cut = measure_core_latency(10'000'000, 1, 1.0);
    CHECK_FALSE(cut.measured);
    CHECK_FALSE(cut.far());
    CHECK(CoreLatency{true, 160.0}.far());  // a VM's far placement
    CHECK_FALSE(CoreLatency{true, 28.0}.far());
    CHECK_FALSE(CoreLatency{false, 0.0}.far());
}

TEST_CASE("range ticks: a zoomed time ruler", "[app][profile]") {
    auto same = [](const std::vector<double>& a, const std::vector<double>& b) {
        if (a.size() != b.size()) return false;
        for (size_t i = 0; i < a.size(); ++i)
            if (a[i] != Approx(b[i])) return false;
        return true;
    };
    CHECK(same(range_ticks(0.3, 1.25, 5), {0.4, 0.6, 0.8, 1.0, 1.2}));
    CHECK(same(range_ticks(0.3, 1.25, 4), {0.5, 1.0}));  // a 0.2375 step rounds up to 0.5
    CHECK(same(range_ticks(10, 20, 2), {10, 15, 20}));
    CHECK(range_ticks(1, 1, 4).empty());
    CHECK(range_ticks(2, 1, 4).empty());
    for (double t : range_ticks(0.0137, 0.0291, 5)) CHECK((t >= 0.0137 && t <= 0.0291));
    CHECK(linear_ticks(1.0, 2) == std::vector<double>{0, 0.5, 1.0});  // unchanged by the shared step helper
}

TEST_CASE("tau slider: log(1 - tau) puts 0.9, 0.99, 0.999 evenly apart", "[app][profile]") {
    const float u9 = tau_to_slider(0.9f), u99 = tau_to_slider(0.99f), u999 = tau_to_slider(0.999f);
    // float tau carries ~7 digits: 1 - 0.999f is exact to ~6e-5 relative, far below a pixel of the slider.
    CHECK(u99 - u9 == Approx(1.0).epsilon(1e-3));
    CHECK(u999 - u99 == Approx(1.0).epsilon(1e-3));
    for (float t : {0.9f, 0.95f, 0.98f, 0.99f, 0.995f, 0.9975f, 0.999f, 0.9999f})
        CHECK(slider_to_tau(tau_to_slider(t)) == Approx(t).epsilon(1e-6));
    CHECK(tau_to_slider(0.5f) == kTauSliderMin);  // clamped to the slider's range
    CHECK(tau_to_slider(1.0f) == kTauSliderMax);
    CHECK(tau_to_slider(NAN) == kTauSliderMax);
    CHECK(slider_to_tau(99.f) == Approx(0.99999f));
}

TEST_CASE("tau sweep: reference first, one run per tau, answers scored, Pareto front marked", "[app][profile]") {
    TauSweep sw;
    CHECK_FALSE(sw.active());  // nothing runs before begin(): the studio polls every frame
    CHECK(sw.next() == -1);
    sw.begin({0.9f, 0.99f, 0.999f});
    CHECK(sw.runs() == 4);
    CHECK(sw.active());
    auto point = [](bool ref, float tau, double ff, std::vector<int32_t> tok, std::string text) {
        SweepPoint p;
        p.reference      = ref;
        p.tau            = tau;
        p.flops_fraction = ff;
        p.tokens         = std::move(tok);
        p.text           = std::move(text);
        return p;
    };
    const SweepPoint pts[] = {point(true, NAN, 1.0, {1, 2, 3, 4}, "10"),
                              point(false, 0.9f, 0.2, {1, 9, 9, 4}, "19"),     // cheapest, half the tokens
                              point(false, 0.99f, 0.3, {1, 2, 3, 4}, "10"),    // same answer, 30% of the work
                              point(false, 0.999f, 0.5, {1, 2, 3, 4}, "10")};  // same answer, more work: dominated
    for (int i = 0; i < 4; ++i) {
        const int r = sw.next();
        REQUIRE(r == i);
        CHECK(sw.next() == -1);  // one run at a time
        if (i == 0)
            CHECK(std::isnan(sw.tau_of(r)));
        else
            CHECK(sw.tau_of(r) == pts[i].tau);
        sw.finished(&pts[i]);
    }
    CHECK_FALSE(sw.active());
    CHECK(sw.next() == -1);
    const auto& p = sw.points();
    REQUIRE(p.size() == 4);
    CHECK(p[0].same_answer);
    CHECK_FALSE(p[1].same_answer);
    CHECK(p[1].agreement == Approx(0.5));
    CHECK(p[2].agreement == Approx(1.0));
    CHECK((!p[0].pareto && p[1].pareto && p[2].pareto && !p[3].pareto));

    // A refused reference ends the sweep (nothing to compare against); a cancelled point is never on the front.
    sw.begin({0.9f});
    REQUIRE(sw.next() == 0);
    sw.finished(nullptr);
    CHECK_FALSE(sw.active());
    std::vector<SweepPoint> v = {pts[0], pts[1]};
    v[1].cancelled            = true;
    score_sweep(v);
    CHECK(v[0].pareto);
    CHECK_FALSE(v[1].pareto);
}

TEST_CASE("layout: the bottom band's splitter share, clamped; the bands still tile the body", "[app][profile]") {
    const StudioLayout d = compute_layout(1280, 720, false);
    const StudioLayout t = compute_layout(1280, 720, false, 0.5f);
    CHECK(t.time.h > d.time.h);
    CHECK(t.time.y + t.time.h == Approx(t.scrubber.y));
    CHECK(t.cosine.y + t.cosine.h == Approx(t.time.y));
    CHECK(t.prompt.h == Approx(t.cosine.h));  // the two upper bands share the rest equally
    const float body = t.scrubber.y - t.prompt.y;
    CHECK(t.time.h == Approx(0.5f * body));
    CHECK(compute_layout(1280, 720, false, 5.f).time.h == Approx(kBottomMax * body));  // clamped
    // The low clamp: kBottomMin of the body, but never below kBottomMinPx (or kBottomMinShare in a small window).
    CHECK(compute_layout(1280, 720, false, 0.f).time.h == Approx(std::min(kBottomMinPx, kBottomMinShare * body)));
    const StudioLayout tall = compute_layout(1600, 2000, false, 0.f);
    CHECK(tall.time.h == Approx(kBottomMin * (tall.scrubber.y - tall.prompt.y)));
}

namespace {
OpTiming timed(int64_t wall_ns, int64_t cpu_ns, bool split = false, EventDevice dev = EventDevice::Cpu,
               int32_t gap_ns = 0) {
    OpTiming o   = plain(0, OpClass::Ffn, 4, wall_ns);
    o.cpu_ns     = cpu_ns;
    o.split      = split;
    o.device     = dev;
    o.cpu_gap_ns = gap_ns;
    return o;
}
}  // namespace

TEST_CASE("preempted ops: wall > 1.5 x cpu + 0.2 ms on an unsplit CPU op", "[app][profile][cpu_time]") {
    using S = OpCpuState;
    CHECK(op_cpu_state(timed(1'000'000, 1'000'000)) == S::OnCpu);
    CHECK(op_cpu_state(timed(1'700'000, 1'000'000)) == S::OnCpu);         // 1.7 ms <= 1.5 + 0.2 ms: the boundary
    CHECK(op_cpu_state(timed(1'700'001, 1'000'000)) == S::Preempted);     // just over it
    CHECK(op_cpu_state(timed(12'000'000, 1'000'000)) == S::Preempted);    // a busy host's 7-30 ms outliers
    CHECK(op_cpu_state(timed(150'000, 10'000)) == S::OnCpu);              // 15x, but inside the 0.2 ms slack
    CHECK(op_cpu_state(timed(12'000'000, 1'000'000, true)) == S::Split);  // the caller waited for the pool
    CHECK(op_cpu_state(timed(12'000'000, -1)) == S::Unmeasured);          // older recording
    CHECK(op_cpu_state(timed(12'000'000, 1'000, false, EventDevice::Cuda)) == S::Unmeasured);  // launch time only
    CHECK(op_preempted(timed(5'000'000, 0)));
    CHECK_FALSE(op_preempted(timed(5'000'000, 0, true)));
    // An older start reading: the op's CPU time is cpu to cpu + gap, and the flag takes the top of that range. A
    // thread that lost 0.8 ms just before a 1 ms op reads cpu 0.2 ms, gap 1 ms: not flagged (1.0 <= 1.5 x 1.2 + 0.2).
    const auto C = EventDevice::Cpu;
    CHECK(op_cpu_state(timed(1'000'000, 200'000, false, C, 1'000'000)) == S::OnCpu);
    CHECK(op_cpu_state(timed(1'000'000, 200'000, false, C, 0)) == S::Preempted);          // no gap: the op lost it
    CHECK(op_cpu_state(timed(1'850'000, 100'000, false, C, 1'000'000)) == S::OnCpu);      // 1.85 = 1.5 x 1.1 + 0.2
    CHECK(op_cpu_state(timed(2'000'001, 200'000, false, C, 1'000'000)) == S::Preempted);  // just over 1.5 x 1.2 + 0.2
    CHECK(op_cpu_state(timed(12'000'000, 1'000'000, false, C, 1'000'000)) == S::Preempted);

    // Stats: one q sample per step, 0.9 ms of CPU each; step 3's took 5 ms of wall time (preempted). Excluding it
    // changes count, times and rates, and the row still says how many were left out.
    RunHistory h;
    RunBegin   rb;
    rb.n_layer        = 1;
    rb.n_seq          = 1;
    rb.gen_length     = 4;
    rb.steps          = 3;
    rb.prompt_lengths = {6};
    rb.env            = {{"n_embd", std::to_string(kD)}};
    h.apply(rb);
    for (int k = 1; k <= 3; ++k) {
        StepBegin sb;
        sb.step = k;
        h.apply(sb);
        OpTiming q = gemm(0, OpClass::Qkv, 10, kD, kD, k == 3 ? 5'000'000 : 1'000'000);
        q.step     = k;
        q.cpu_ns   = 900'000;
        q.split    = k == 1;
        h.apply(q);
        OpTiming old = plain(0, OpClass::Norm, 10, 7'000'000);  // no CPU time: never flagged
        old.step     = k;
        h.apply(old);
    }
    auto q_of = [](const std::vector<OpStat>& v) {
        for (const auto& s : v)
            if (s.label == "q") return s;
        FAIL("no q row");
        return OpStat{};
    };
    const OpStat all = q_of(op_stats(h, 1, 3, false));
    CHECK(all.count == 3);
    CHECK(all.preempted == 1);
    CHECK(all.split == 1);
    CHECK(all.cpu_count == 3);
    CHECK(all.cpu_mean_s() == Approx(0.9e-3));
    CHECK(all.max_s == Approx(5e-3));
    const OpStat kept = q_of(op_stats(h, 1, 3, false, true));
    CHECK(kept.count == 2);
    CHECK(kept.preempted == 1);
    CHECK(kept.max_s == Approx(1e-3));
    CHECK(kept.total_s == Approx(2e-3));
    CHECK(kept.gflops_per_s() == Approx(2 * 2.0 * 10 * kD * kD / 2e-3 * 1e-9));
    // A range holding only the preempted sample keeps the row, empty.
    const OpStat only = q_of(op_stats(h, 3, 3, false, true));
    CHECK(only.count == 0);
    CHECK(only.preempted == 1);
    CHECK(only.total_s == 0);
}

TEST_CASE("step rates: weight bytes of the step's GEMMs over its time, beside GFLOP/s", "[app][profile]") {
    // One dense layer of 10 rows and the head over 4 rows; fp32 weights (gemm() counts W + x + y at 4 bytes).
    StepData sd;
    sd.step  = 1;
    sd.begun = true;
    sd.ops   = dense_layer_ops(0, 10);
    sd.ops.push_back(gemm(-1, OpClass::LmHead, 4, kVocab, kD));
    const double weights = 4.0 * (kD * kD + 2.0 * kKv * kD + kD * kD + 2.0 * kFf * kD + kD * kFf + kVocab * kD);
    double       flops   = 0;
    for (const auto& o : sd.ops) flops += o.flops;
    // Not ended: the time is the sum of the op times (15 ops of 1 us).
    StepRates r = step_rates(sd, kD);
    CHECK(r.gemms == 8);
    CHECK(r.weight_bytes == Approx(weights));
    CHECK(r.seconds == Approx(15e-6));
    CHECK(r.flops == Approx(flops));
    CHECK(r.weight_gbytes_per_s() == Approx(weights / 15e-6 * 1e-9));
    // Ended: the step's wall time and the engine's FLOPs count.
    sd.ended       = true;
    sd.end.wall_ns = 2'000'000;
    sd.end.flops   = 3e6;
    r              = step_rates(sd, kD);
    CHECK(r.seconds == Approx(2e-3));
    CHECK(r.weight_gbytes_per_s() == Approx(weights / 2e-3 * 1e-9));
    CHECK(r.gflops_per_s() == Approx(3e6 / 2e-3 * 1e-9));
    // bf16 weights: W counts 2 bytes per element, the fp32 activations are still taken out.
    OpTiming q = gemm(0, OpClass::Qkv, 10, kD, kD);
    q.bytes    = 2.0 * kD * kD + 4.0 * (10.0 * kD + 10.0 * kD);
    CHECK(gemm_weight_bytes(q, name_ops(std::vector<OpTiming>{q}, kD)[0]) == Approx(2.0 * kD * kD));
    // Without n_embd the shapes are unknown: no weight bytes, and no division by zero anywhere.
    CHECK(step_rates(sd, 0).weight_bytes == 0);
    CHECK(step_rates(StepData{}, kD).weight_gbytes_per_s() == 0);
}

TEST_CASE("kernel join: CUPTI records under the ops that launched them, by step, layer and op class",
          "[app][profile][cupti]") {
    StepData sd;
    sd.step       = 2;
    sd.begun      = true;
    sd.ended      = true;
    sd.t_begin_ns = 1000;
    sd.end.t_ns   = 9000;
    for (OpTiming o : {gemm(0, OpClass::Qkv, 4, kD, kD, 100), gemm(0, OpClass::Qkv, 4, kKv, kD, 50),
                       plain(0, OpClass::AttnExact, 4, 30), gemm(-1, OpClass::LmHead, 4, kVocab, kD, 70)}) {
        o.step = 2;
        sd.ops.push_back(o);
    }
    auto kernel = [](const char* name, int32_t step, int32_t layer, OpClass op, int64_t t0, int64_t t1) {
        KernelRecord k;
        k.name     = name;
        k.start_ns = t0;
        k.end_ns   = t1;
        if (step > 0) {
            k.external_id = encode_external_id(step, layer, uint8_t(op));
            decode_external_id(k.external_id, k.step, k.layer, k.op);
        }
        return k;
    };
    const std::vector<KernelRecord> ks = {
        kernel("sgemm_a", 2, 0, OpClass::Qkv, 2000, 2400),  // q
        kernel("sgemm_a", 2, 0, OpClass::Qkv, 2500, 2700),  // k: same kernel, same key
        kernel("attn_kernel", 2, 0, OpClass::AttnExact, 3000, 3100),
        kernel("gemv_head", 2, -1, OpClass::LmHead, 4000, 5000),
        kernel("sgemm_a", 3, 0, OpClass::Qkv, 9500, 9900),           // the next step: not joined here
        kernel("memcpy HtoD", 0, -1, OpClass::Other, 5000, 5600),    // no engine op, inside the step's span
        kernel("memcpy HtoD", 0, -1, OpClass::Other, 20000, 20100),  // no engine op, after the step
        kernel("orphan", 2, 1, OpClass::Ffn, 6000, 6100),            // its op event is missing (dropped)
    };
    const StepKernels j = join_step_kernels(sd, ks);
    CHECK(j.records == 6);
    CHECK(j.gpu_s == Approx((400 + 200 + 100 + 1000 + 600 + 100) * 1e-9));
    REQUIRE(j.rows.size() == 5);
    CHECK(j.rows[0].name == "gemv_head");  // largest GPU time first
    const KernelRow* sg = nullptr;
    for (const auto& r : j.rows)
        if (r.name == "sgemm_a") sg = &r;
    REQUIRE(sg);
    CHECK(sg->count == 2);
    CHECK(sg->gpu_s == Approx(600e-9));
    CHECK((sg->layer == 0 && sg->op == OpClass::Qkv && sg->attributed));
    bool memcpy_seen = false;
    for (const auto& r : j.rows)
        if (r.name == "memcpy HtoD") {
            memcpy_seen = true;
            CHECK_FALSE(r.attributed);
            CHECK(r.count == 1);
        }
    CHECK(memcpy_seen);
    // Per op key: host time of the ops beside the GPU time of their kernels; the orphan key has no op.
    auto key = [&](int32_t l, OpClass c) -> const OpGpuTime* {
        for (const auto& k : j.ops)
            if (k.layer == l && k.op == c) return &k;
        return nullptr;
    };
    REQUIRE(key(0, OpClass::Qkv));
    CHECK(key(0, OpClass::Qkv)->n_ops == 2);
    CHECK(key(0, OpClass::Qkv)->host_s == Approx(150e-9));
    CHECK(key(0, OpClass::Qkv)->n_kernels == 2);
    CHECK(key(0, OpClass::Qkv)->gpu_s == Approx(600e-9));
    REQUIRE(key(-1, OpClass::LmHead));
    CHECK(key(-1, OpClass::LmHead)->gpu_s == Approx(1000e-9));
    REQUIRE(key(1, OpClass::Ffn));
    CHECK(key(1, OpClass::Ffn)->n_ops == 0);
    CHECK(key(1, OpClass::Ffn)->n_kernels == 1);
    CHECK(j.ops.front().op == OpClass::Qkv);  // keys in the order of the step's ops
    // No records: nothing joined.
    CHECK(join_step_kernels(sd, {}).records == 0);
}
