// CUPTI collector and NVTX sink. On a machine without a driver (CI) the collector must report "CUPTI unavailable:
// <reason>" from available() and start() and stay inert; with a device it must start, stop and hand back sane
// records. The NVTX sink's step > layer > op nesting is checked through its range bookkeeping in every build.
#include <catch2/catch.hpp>

#include <string>

#include "instrumentation/cupti_collector.h"
#include "instrumentation/gpu_capture.h"
#include "instrumentation/nvtx_sink.h"
#include "tests/support/synthetic_run.h"

using namespace dyllm;

namespace {
bool starts_with(const std::string& s, const std::string& p) {
    return s.rfind(p, 0) == 0;
}
}  // namespace

TEST_CASE("CuptiCollector: unavailable is reported cleanly, available starts and stops", "[instr][cupti]") {
    std::string    why;
    const bool     avail = CuptiCollector::available(&why);
    CuptiCollector c;
    CHECK_FALSE(c.running());
    std::string err;
    if (!avail) {
        INFO(why);
        CHECK(starts_with(why, "CUPTI unavailable: "));
        CHECK(why.size() > std::string("CUPTI unavailable: ").size());
        CHECK(CuptiCollector::available(nullptr) == false);  // null reason pointer is fine
        // start() goes all the way to CUPTI (cuptiActivityEnable fails without a driver) and must fail cleanly.
        const bool started = c.start(&err);
        INFO(err);
        if (!started) {
            CHECK(starts_with(err, "CUPTI unavailable: "));
            CHECK_FALSE(c.running());
        } else {
            c.stop();  // a driver without devices could still let CUPTI start: then it must stop cleanly
        }
    } else {
        REQUIRE(c.start(&err));
        CHECK(c.running());
        // A second collector may not run at the same time (CUPTI's callbacks are process-global).
        CuptiCollector other;
        std::string    err2;
        CHECK_FALSE(other.start(&err2));
        CHECK(starts_with(err2, "CUPTI unavailable: another CuptiCollector"));
        c.stop();
        for (const auto& k : c.take()) CHECK(k.end_ns >= k.start_ns);
    }
    c.stop();  // idempotent
    CHECK_FALSE(c.running());
    CHECK(c.take().empty());
    CHECK(c.callback_errors() == 0);
}

TEST_CASE("GpuCapture: the one start of dyllm trace and the studio; fails cleanly without a driver", "[instr][cupti]") {
    {
        GpuCapture g;
        g.start(false, true);  // CPU backend: nothing starts
        CHECK(g.cupti_status() == "off (cpu backend)");
        CHECK(g.sinks().empty());
        CHECK_FALSE(g.collecting());
        CHECK(g.take_completed().empty());
    }
    {
        GpuCapture g;
        g.start(true, false);  // --no-cupti: NVTX only
        CHECK(g.cupti_status() == "off (--no-cupti)");
        CHECK(g.sinks().size() == 1);
        CHECK_FALSE(g.collecting());
    }
    GpuCapture  g;
    std::string why;
    const bool  avail = CuptiCollector::available(&why);
    g.start(true, true);
    INFO(g.cupti_status());
    if (!avail) {
        // No driver (or built without CUPTI): the status says why in one line, the correlation sink stays out of
        // the tee and there is nothing to take.
        CHECK(starts_with(g.cupti_status(), "CUPTI unavailable: "));
        CHECK_FALSE(g.collecting());
        CHECK(g.sinks().size() == 1);
        CHECK(g.take_completed().empty());
    } else if (g.collecting()) {
        CHECK(g.cupti_status() == "on");
        CHECK(g.sinks().size() == 2);
        for (const auto& k : g.take_completed()) CHECK(k.end_ns >= k.start_ns);
    }
    std::vector<std::pair<std::string, std::string>> env;
    g.add_env(env, 0);
    REQUIRE(env.size() == 5);
    CHECK(env[0] == std::make_pair(std::string("cupti"), g.cupti_status()));
    g.stop();
    g.stop();  // idempotent
    CHECK_FALSE(g.collecting());
}

TEST_CASE("CuptiCorrelationSink: inert while the collector is not running", "[instr][cupti]") {
    CuptiCollector       c;
    CuptiCorrelationSink corr(c);
    CHECK_FALSE(corr.wants_op_timings());  // no reason to time ops for a collector that does not run
    CHECK_FALSE(corr.wants_cosines());
    corr.on_op_begin(1, 0, OpClass::Ffn);
    corr.on_op(OpTiming{});
    CHECK(corr.depth() == 0);
    CHECK(corr.errors() == 0);
}

namespace {
// Checks, at every op begin, how deep the NVTX sink (fed first through the tee) has nested its ranges.
struct DepthProbe : EventSink {
    const NvtxSink* nvtx;
    int             bad_in_layer = 0, bad_outside = 0, ops = 0;
    explicit DepthProbe(const NvtxSink* n) : nvtx(n) {}
    void on_op_begin(int32_t, int32_t layer, OpClass) override {
        ++ops;
        const int want = layer >= 0 ? 3 : 2;  // step > layer > op, or step > op outside the layers
        if (nvtx->depth() != want) ++(layer >= 0 ? bad_in_layer : bad_outside);
    }
};
}  // namespace

TEST_CASE("NvtxSink: ranges nest step > layer > op and are balanced", "[instr][nvtx]") {
    NvtxSink         nvtx;
    DepthProbe       probe(&nvtx);
    TeeSink          tee({&nvtx, &probe});
    SyntheticRunSpec sp;
    emit_synthetic_run(tee, sp);
    CHECK(probe.ops == sp.steps * (3 + 5 * sp.n_layer));
    CHECK(probe.bad_in_layer == 0);
    CHECK(probe.bad_outside == 0);
    CHECK(nvtx.depth() == 0);
    // One range per step, per layer per step, per op.
    CHECK(nvtx.pushed() == uint64_t(sp.steps) * uint64_t(1 + sp.n_layer + 3 + 5 * sp.n_layer));

    // A step cut short by an error closes its ranges.
    StepBegin sb;
    sb.step = 99;
    nvtx.on_step_begin(sb);
    nvtx.on_op_begin(99, 2, OpClass::Qkv);
    CHECK(nvtx.depth() == 3);
    nvtx.on_error(ErrorEvent{"step", "boom"});
    CHECK(nvtx.depth() == 0);
    // An op end without a begin is ignored, not popped past the stack.
    nvtx.on_op(OpTiming{});
    CHECK(nvtx.depth() == 0);
}
