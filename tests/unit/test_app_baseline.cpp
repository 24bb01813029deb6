// Speed-up baselines (app/model/baseline_match.h): only a finished original run with the same model, prompt, lengths,
// steps, block, backend and threads; the time outside ops a step leaves uncovered (app/model/step_gaps.h); the
// speed-up of a repeated comparison (app/model/compare_reps.h).
#include <catch2/catch.hpp>

#include <string>

#include "app/model/baseline_match.h"
#include "app/model/compare_reps.h"
#include "app/model/step_gaps.h"
#include "app/model/suite_sweep.h"
#include "app/model/run_list.h"

using namespace dyllm;
using namespace dyllm::app;

namespace {

struct RunSpec {
    std::string method = "original", model = "tiny-llada", backend = "cpu (2 threads, openblas)";
    std::string prompt = "What is 2 + 3?", block = "32";
    int         gen = 64, steps = 64, prompt_len = 20;
    bool        finished = true, cancelled = false;
};

std::vector<EventRecord> events_of(const RunSpec& r, const std::string& label) {
    RunBegin rb;
    rb.label          = label;
    rb.method         = r.method;
    rb.model          = r.model;
    rb.family         = "llada";
    rb.backend        = r.backend;
    rb.n_layer        = 2;
    rb.n_seq          = 1;
    rb.gen_length     = r.gen;
    rb.steps          = r.steps;
    rb.prompt_lengths = {r.prompt_len};
    rb.env            = {{"model_dir", r.model}, {"block_length", r.block}, {"tau", "0.99"}};
    std::vector<EventRecord> ev{rb};
    if (r.finished) {
        RunEnd re;
        re.steps     = r.steps;
        re.cancelled = r.cancelled;
        ev.push_back(re);
    }
    return ev;
}

// Adds a run to the list as the studio does: request first, then the engine's events under the label.
const RunEntry& add(RunList& list, const RunSpec& r) {
    const std::string label = list.expect({"", r.prompt, ""});
    for (const auto& e : events_of(r, label)) list.apply(e);
    return *list.newest();
}

}  // namespace

TEST_CASE("baseline: only an original run with every speed-relevant setting equal", "[app_model]") {
    RunSpec dy;
    dy.method = "dyllm";

    SECTION("the matching original run is found and named") {
        RunList         list;
        const RunEntry& base = add(list, RunSpec{});
        const RunEntry& run  = add(list, dy);
        CHECK(baseline_mismatch(run, base).empty());
        CHECK(find_baseline(list, run) == &base);
        CHECK(baseline_name(base) == "#1 original, tiny-llada");
        // A run is never its own baseline, and a dyllm run is no baseline.
        CHECK(find_baseline(list, base) == nullptr);
        CHECK(baseline_mismatch(base, run) == "method dyllm, not original");
    }

    SECTION("another model's original run is no baseline (tiny-dream against tiny-llada's)") {
        RunList list;
        add(list, RunSpec{});
        RunSpec dream       = dy;
        dream.model         = "tiny-dream";
        const RunEntry& run = add(list, dream);
        CHECK(find_baseline(list, run) == nullptr);
        CHECK(baseline_mismatch(run, list[0]) == "model tiny-llada, not tiny-dream");
    }

    SECTION("each setting that changes tokens/s breaks the match") {
        auto check_differs = [&](RunSpec other, const std::string& reason_start) {
            RunList list;
            add(list, RunSpec{});
            other.method        = "dyllm";
            const RunEntry& run = add(list, other);
            CHECK(find_baseline(list, run) == nullptr);
            CHECK(baseline_mismatch(run, list[0]).rfind(reason_start, 0) == 0);
        };
        RunSpec r;
        r.backend = "cpu (1 thread, openblas)";
        check_differs(r, "backend");
        r        = RunSpec{};
        r.prompt = "Another question";
        check_differs(r, "another prompt");
        r            = RunSpec{};
        r.prompt_len = 31;  // the same message under the chat template
        check_differs(r, "prompt tokens");
        r     = RunSpec{};
        r.gen = 128;
        check_differs(r, "gen");
        r       = RunSpec{};
        r.steps = 32;
        check_differs(r, "steps");
        r       = RunSpec{};
        r.block = "16";
        check_differs(r, "block");
    }

    SECTION("unfinished or aborted original runs are no baseline; the newest match wins") {
        RunList list;
        RunSpec running;
        running.finished = false;
        add(list, running);
        RunSpec aborted;
        aborted.cancelled = true;
        add(list, aborted);
        const RunEntry& run = add(list, dy);
        CHECK(find_baseline(list, run) == nullptr);
        const RunEntry& b1 = add(list, RunSpec{});
        const RunEntry& b2 = add(list, RunSpec{});
        CHECK(find_baseline(list, list[2]) == &b2);
        CHECK(&b1 != &b2);
    }
}

TEST_CASE("step gaps: the stretches of a step no op covers, overlapping ops merged", "[app_model]") {
    StepData sd;
    sd.step        = 1;
    sd.begun       = true;
    sd.ended       = true;
    sd.t_begin_ns  = 1000;
    sd.end.wall_ns = 1000;  // the step runs from 1000 to 2000
    auto op        = [](int64_t t0, int64_t dur) {
        OpTiming o;
        o.t_begin_ns = t0;
        o.dur_ns     = dur;
        return o;
    };
    sd.ops           = {op(1100, 200), op(1250, 100), op(1500, 300)};  // 1100-1300 and 1250-1350 overlap
    const StepGaps g = step_gaps(sd);
    CHECK(g.span.t0 == 1000);
    CHECK(g.span.t1 == 2000);
    REQUIRE(g.gaps.size() == 3);
    CHECK((g.gaps[0].t0 == 1000 && g.gaps[0].t1 == 1100));
    CHECK((g.gaps[1].t0 == 1350 && g.gaps[1].t1 == 1500));
    CHECK((g.gaps[2].t0 == 1800 && g.gaps[2].t1 == 2000));
    CHECK(g.gap_ns == 100 + 150 + 200);

    // Without a wall time (a step still running) the span is the ops' extent.
    sd.ended               = false;
    const StepGaps running = step_gaps(sd);
    CHECK(running.span.t0 == 1100);
    CHECK(running.span.t1 == 1800);
    CHECK(running.gap_ns == 150);
    CHECK(step_gaps(StepData{}).span.dur() == 0);
}

TEST_CASE("run context: model and the start of the prompt, cut on a character boundary", "[app_model]") {
    RunList list;
    RunSpec r;
    r.prompt          = "Q: add 477+298\nthen explain";
    const RunEntry& e = add(list, r);
    CHECK(run_context(e) == "tiny-llada, \"Q: add 477+298 then explain\"");
    CHECK(run_context(e, 6) == "tiny-llada, \"Q: add...\"");
    r.prompt           = "\xC3\xA9\xC3\xA9\xC3\xA9";  // three two-byte characters
    r.model            = "tiny-dream";
    const RunEntry& e2 = add(list, r);
    CHECK(run_context(e2, 3) == "tiny-dream, \"\xC3\xA9...\"");  // never half a character
}

namespace {

// A finished run of one step whose wall time gives it `tokens_per_s` (gen 64 tokens).
std::string timed_run(RunList& list, const char* method, double tokens_per_s, bool cancelled = false) {
    RunSpec r;
    r.method                = method;
    r.steps                 = 1;
    r.finished              = false;
    r.cancelled             = cancelled;
    const std::string label = list.expect({"", r.prompt, ""});
    for (const auto& e : events_of(r, label)) list.apply(e);
    StepBegin sb;
    sb.step = 1;
    list.apply(sb);
    StepEnd se;
    se.step             = 1;
    se.wall_ns          = int64_t(64 / tokens_per_s * 1e9);
    se.tokens_committed = 64;
    list.apply(se);
    RunEnd re;
    re.steps     = 1;
    re.cancelled = cancelled;
    list.apply(re);
    return label;
}

}  // namespace

TEST_CASE("repeated comparison: the speed-up of each pair, median and range", "[app_model]") {
    double m = 0, lo = 0, hi = 0;
    median_range({3, 1, 2}, &m, &lo, &hi);
    CHECK(m == 2);
    CHECK(lo == 1);
    CHECK(hi == 3);
    median_range({4, 1, 2, 3}, &m, &lo, &hi);
    CHECK(m == Approx(2.5));
    median_range({}, &m, &lo, &hi);
    CHECK((m == 0 && lo == 0 && hi == 0));

    RunList                                          list;
    std::vector<std::pair<std::string, std::string>> pairs;
    // Three pairs: 2x, 1.5x (a noisy one) and 2.2x; the median is not the noisy pair's.
    for (double b : {200.0, 150.0, 220.0})
        pairs.emplace_back(timed_run(list, "original", 100), timed_run(list, "dyllm", b));
    RepeatedSpeedup r = repeated_speedup(list, pairs);
    CHECK(r.pairs == 3);
    REQUIRE(r.counted == 3);
    CHECK(r.speedups[0] == Approx(2.0));
    CHECK(r.median == Approx(2.0));
    CHECK(r.lo == Approx(1.5));
    CHECK(r.hi == Approx(2.2));
    // An aborted run and a label no longer in the list leave their pair out.
    pairs.emplace_back(timed_run(list, "original", 100), timed_run(list, "dyllm", 300, true));
    pairs.emplace_back("#999", "#1000");
    r = repeated_speedup(list, pairs);
    CHECK(r.pairs == 5);
    CHECK(r.counted == 3);
    CHECK(r.hi == Approx(2.2));
}

TEST_CASE("suite sweep repetitions: tokens/s the median of the runs, with their range", "[app_model]") {
    auto point = [](double tps) {
        SuitePoint p;
        p.items            = 10;
        p.correct          = 7;
        p.accuracy         = 0.7;
        p.generated_tokens = 640;
        p.tokens_per_s     = tps;
        p.denoise_s        = 640 / tps;
        return p;
    };
    const SuitePoint m = merge_repetitions({point(100), point(40), point(120)});  // one run on a loaded machine
    CHECK(m.repetitions == 3);
    CHECK(m.tokens_per_s == Approx(100));
    CHECK(m.tokens_per_s_lo == Approx(40));
    CHECK(m.tokens_per_s_hi == Approx(120));
    CHECK(m.denoise_s == Approx(6.4));  // tokens over time stays the rate shown
    CHECK(m.accuracy == Approx(0.7));
    CHECK(merge_repetitions({point(50), point(70)}).tokens_per_s == Approx(60));
    CHECK(merge_repetitions({}).repetitions == 1);
}

TEST_CASE("timeline range: op time by class clipped to the range, and the outside-ops gaps in it", "[app_model]") {
    const std::vector<RangeOp>  ops  = {{0, 100, OpClass::Qkv}, {150, 300, OpClass::Ffn}, {400, 500, OpClass::Qkv}};
    const std::vector<TimeSpan> gaps = {{100, 150}, {300, 400}};
    const RangeStats            r    = range_stats(ops, gaps, 50, 420);
    CHECK(r.span_ns == 370);
    CHECK(r.n_ops == 3);
    CHECK(r.ops_ns == 50 + 150 + 20);
    CHECK(r.by_class[size_t(OpClass::Qkv)] == 70);
    CHECK(r.by_class[size_t(OpClass::Ffn)] == 150);
    CHECK(r.outside_ns == 50 + 100);
    CHECK(r.ops_ns + r.outside_ns == r.span_ns);            // inside one step every ns is an op or a gap
    CHECK(range_stats(ops, gaps, 420, 50).span_ns == 370);  // dragged right to left
    CHECK(range_stats(ops, gaps, 600, 700).n_ops == 0);
}
