// The engine <-> UI hand-off under two threads, the way dyllm-studio uses it: a worker thread steps a Session into a
// QueueSink (SPSC ring + canvas double buffer) while the "UI" thread drains it, changes tau live, cancels mid-run and
// restarts. Written for the ThreadSanitizer pass of .ci/run (DYLLM_SANITIZE=thread), which must report no race; the
// assertions also hold in the normal build.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "engine/engine.h"
#include "instrumentation/queue_sink.h"
#include "tests/support/tiny_models.h"

using namespace dyllm;

namespace {

DiffusionParams params(int gen, int steps) {
    DiffusionParams p;
    p.gen_length   = gen;
    p.steps        = steps;
    p.block_length = gen;
    return p;
}

}  // namespace

TEST_CASE("worker steps while the UI drains, sets tau live, cancels mid-run and restarts",
          "[engine][threads][handoff]") {
    const auto model = Model::load(test::make_tiny_checkpoint(Family::LLaDA).string(), BackendKind::Cpu, 2);
    const auto ids   = test::random_prompt(model->config(), 8, 3);
    QueueSink  sink(1 << 12);  // small: the ring wraps many times and may drop, which is counted, never a race

    std::atomic<int>  runs_done{0};
    std::atomic<bool> stop_ui{false};
    std::atomic<int>  steps_seen{0};
    Session           session(*model, &sink);

    // UI thread: drains the ring and reads the canvas buffer until told to stop.
    std::thread ui([&] {
        EventRecord r;
        while (!stop_ui.load()) {
            while (sink.pop(r)) steps_seen.fetch_add(1, std::memory_order_relaxed);
            (void)sink.latest_canvases();
            std::this_thread::yield();
        }
        while (sink.pop(r)) steps_seen.fetch_add(1, std::memory_order_relaxed);
    });

    // Run 1: to completion, with tau changed from this thread while the worker steps.
    {
        std::atomic<bool> finished{false};
        session.start({ids}, params(32, 32));
        std::thread worker([&] {
            while (session.step()) {
            }
            finished.store(true);
            runs_done.fetch_add(1);
        });
        for (int k = 0; !finished.load(); ++k) {
            session.set_tau(k % 2 ? 0.9f : 0.99f);
            std::this_thread::yield();
        }
        worker.join();
        CHECK(session.done());
        CHECK(session.current_step() == 32);
    }
    // Run 2: cancelled from this thread while the worker is mid-run.
    {
        session.start({ids}, params(64, 64));
        std::atomic<int>  steps{0};
        std::atomic<bool> cancel_sent{false};
        std::thread       worker([&] {
            while (session.step()) {
                // After step 2 the worker waits for the cancel, so a busy machine that starves this test's main
                // thread cannot let the run finish first; the cancel still lands in a live run.
                if (steps.fetch_add(1) + 1 == 2)
                    while (!cancel_sent.load()) std::this_thread::yield();
            }
            runs_done.fetch_add(1);
        });
        while (steps.load() < 2) std::this_thread::yield();
        session.cancel();
        cancel_sent.store(true);
        worker.join();
        CHECK(session.done());
        CHECK(session.current_step() < 64);
    }
    // Run 3: a restart on the same session after the cancel runs to the end.
    {
        session.start({ids}, params(16, 16));
        std::thread worker([&] {
            session.run();
            runs_done.fetch_add(1);
        });
        worker.join();
        CHECK(session.done());
        CHECK(session.current_step() == 16);
    }
    stop_ui.store(true);
    ui.join();
    CHECK(runs_done.load() == 3);
    CHECK(uint64_t(steps_seen.load()) + sink.dropped() > 0);
}
