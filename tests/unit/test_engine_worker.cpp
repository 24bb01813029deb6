// The studio's run bookkeeping without a window: a real Studio (worker thread, tiny checkpoint, QueueSink) rebuilds
// each run from the event stream alone. Two runs in a row, a run replaced mid-way (cancelled) and a compare pair each
// get their own label, request (prompt, expected answer), decoded texts and cache bytes.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <thread>

#include "app/studio/studio.h"
#include "engine/engine.h"
#include "tests/support/tiny_models.h"

using namespace dyllm;
using namespace dyllm::app;

namespace {

StudioOptions tiny_options() {
    StudioOptions o;
    o.model               = test::make_tiny_checkpoint(Family::LLaDA).string();
    o.params.gen_length   = 16;
    o.params.steps        = 8;
    o.params.block_length = 8;
    o.threads             = 1;
    o.speed               = 0;  // as fast as the engine goes (interactive sessions default to a watchable speed)
    return o;
}

// Frames without drawing: pump the queue and run the per-frame bookkeeping until pred holds (60 s ceiling).
bool frames_until(Studio& s, const std::function<bool()>& pred) {
    const auto t_end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < t_end) {
        s.pump_events(50.0);
        s.begin_frame();
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
}

// What a direct Session gives for this prompt and these parameters: the reference for RunEnd's texts and cache bytes.
GenerationResult direct_run(const std::string& model_dir, const std::string& prompt, const DiffusionParams& p) {
    auto    m = Model::load(model_dir, BackendKind::Cpu, 1);
    Session session(*m);
    session.start({encode_prompt(*m, prompt, true)}, p);
    session.run();
    return session.result();
}

// The run's RunEnd carries exactly what the direct run decoded and held.
void check_against_direct(const RunEntry& e, const GenerationResult& ref) {
    REQUIRE(e.history.finished());
    REQUIRE(e.history.run_end().texts.size() == 1);
    CHECK(e.history.run_end().texts[0] == ref.sequences.at(0).text);
    CHECK(e.history.run_end().cache_bytes == ref.cache_bytes);
}

void set_prompt(Studio& s, const char* text) {
    std::snprintf(s.prompt, sizeof s.prompt, "%s", text);
    s.example_idx = -1;
}

}  // namespace

TEST_CASE("studio: two runs in a row each get their own label, request, texts and cache bytes", "[studio_runs]") {
    Studio s(tiny_options());
    REQUIRE(!s.examples.items.empty());  // the task suite under DYLLM_SOURCE_DIR gives run 1 an expected answer
    s.example_idx = 0;
    std::snprintf(s.prompt, sizeof s.prompt, "%s", s.examples.items[0].prompt.c_str());
    s.ui.method_idx               = 1;  // dyllm: holds caches
    const DiffusionParams p1      = s.make_request(true).params;
    const std::string     prompt1 = s.prompt;
    s.open(true);
    REQUIRE(frames_until(s, [&] { return s.runs.size() == 1 && s.runs[0].history.finished(); }));

    set_prompt(s, "hello there");
    s.ui.method_idx          = 0;  // original: no caches
    const DiffusionParams p2 = s.make_request(true).params;
    s.restart(true);
    REQUIRE(frames_until(s, [&] { return s.runs.size() == 2 && s.runs[1].history.finished(); }));

    const RunEntry& a = s.runs[0];
    const RunEntry& b = s.runs[1];
    CHECK(a.label == "#1");
    CHECK(b.label == "#2");
    CHECK(a.history.info().label == a.label);
    CHECK(b.history.info().label == b.label);
    CHECK(a.serial == 1);
    CHECK(b.serial == 2);
    CHECK(a.request.prompt == prompt1);
    CHECK(a.request.answer == s.examples.items[0].answer);
    CHECK(b.request.prompt == "hello there");
    CHECK(b.request.answer.empty());
    CHECK(a.history.info().method == "dyllm");
    CHECK(b.history.info().method == "original");
    CHECK(!a.history.run_end().cancelled);
    CHECK(!b.history.run_end().cancelled);
    const GenerationResult ra = direct_run(s.opts.model, prompt1, p1);
    const GenerationResult rb = direct_run(s.opts.model, "hello there", p2);
    REQUIRE(ra.cache_bytes != rb.cache_bytes);  // dyllm's caches vs original's: the records cannot be swapped
    check_against_direct(a, ra);
    check_against_direct(b, rb);
    // On the CPU no GPU capture runs and no kernel records are kept; an op carries its thread's CPU time exactly
    // when it lasted kOpCpuTimeMinNs (instrumentation/events.h).
    CHECK(s.status.cupti == "off (cpu backend)");
    CHECK(s.worker.kernels(a.label).empty());
    size_t ops = 0, long_ops = 0, with_cpu = 0, long_with_cpu = 0;
    for (int k = 1; k <= a.history.step_count(); ++k)
        for (const OpTiming& o : a.history.step(k)->ops) {
            const bool is_long = o.dur_ns >= kOpCpuTimeMinNs;
            ops += 1;
            long_ops += is_long;
            with_cpu += o.cpu_ns >= 0;
            long_with_cpu += is_long && o.cpu_ns >= 0;
        }
    CHECK(ops > 0);
    CHECK(with_cpu == long_ops);
    CHECK(long_with_cpu == long_ops);
}

TEST_CASE("studio: a run replaced mid-way ends with its own cancelled RunEnd", "[studio_runs]") {
    Studio s(tiny_options());
    set_prompt(s, "first prompt");
    s.open(false);  // paused: step twice by hand
    s.worker.step_once();
    s.worker.step_once();
    REQUIRE(frames_until(s, [&] { return s.runs.size() == 1 && s.runs[0].history.steps_ended() == 2; }));

    set_prompt(s, "second prompt");
    s.restart(true);
    REQUIRE(frames_until(s, [&] { return s.runs.size() == 2 && s.runs[1].history.finished(); }));
    const RunEntry& a = s.runs[0];
    const RunEntry& b = s.runs[1];
    REQUIRE(a.history.finished());
    CHECK(a.history.run_end().cancelled);
    CHECK(a.history.run_end().steps == 2);
    CHECK(a.history.run_end().texts.size() == 1);
    CHECK(a.request.prompt == "first prompt");
    CHECK(a.label == "#1");
    CHECK(!b.history.run_end().cancelled);
    CHECK(b.history.run_end().steps == 8);
    CHECK(b.request.prompt == "second prompt");
    CHECK(b.label == "#2");
    CHECK(b.history.info().label == "#2");
}

TEST_CASE("studio: a compare pair runs A then B, each with its own record", "[studio_runs]") {
    Studio s(tiny_options());
    set_prompt(s, "compare me");
    s.ui.method_idx          = 1;
    const DiffusionParams pb = s.make_request(true).params;
    DiffusionParams       pa = pb;
    pa.method                = Method::Original;
    s.load_selected_model();
    s.start_compare(true, NAN);
    CHECK(s.bottom_tab == BottomTab::Compare);  // Compare is a tab of the layout, selected when a pair starts
    CHECK(s.tab_request == int(BottomTab::Compare));
    REQUIRE(frames_until(s, [&] { return s.compare_finished(); }));
    CHECK(!s.compare_queued);
    REQUIRE(s.runs.size() == 2);
    const RunEntry& a = s.runs[0];
    const RunEntry& b = s.runs[1];
    CHECK(a.request.tag == "compare-a");
    CHECK(b.request.tag == "compare-b");
    CHECK(a.label == "#1 compare-a");
    CHECK(b.label == "#2 compare-b");
    CHECK(a.history.info().label == a.label);
    CHECK(b.history.info().label == b.label);
    CHECK(a.request.prompt == "compare me");
    CHECK(b.request.prompt == "compare me");
    CHECK(a.history.info().method == "original");
    CHECK(b.history.info().method == "dyllm");
    const GenerationResult ra = direct_run(s.opts.model, "compare me", pa);
    const GenerationResult rb = direct_run(s.opts.model, "compare me", pb);
    REQUIRE(ra.cache_bytes != rb.cache_bytes);
    check_against_direct(a, ra);
    check_against_direct(b, rb);
}

TEST_CASE("studio: a comparison whose run A is refused does not wait forever", "[studio_runs]") {
    Studio s(tiny_options());
    s.ui.gen_length = 15;  // not a multiple of steps: the engine refuses the start
    s.load_selected_model();
    s.start_compare(true, NAN);
    REQUIRE(frames_until(s, [&] { return !s.compare_queued; }));
    CHECK(s.runs.empty());
    CHECK(!s.message.empty());
}

TEST_CASE("studio: play speed is watchable interactively and unlimited in the headless modes", "[studio_runs]") {
    StudioOptions o;
    CHECK(play_speed(o) == kWatchableSpeed);
    CHECK(kWatchableSpeed >= 3.f);
    CHECK(kWatchableSpeed <= 4.f);
    o.screenshot = "/tmp/x.png";
    CHECK(play_speed(o) == 0.f);
    o.screenshot.clear();
    o.bench_frames = 100;
    CHECK(play_speed(o) == 0.f);
    o.speed = 12.f;  // --speed wins
    CHECK(play_speed(o) == 12.f);
    o.speed        = 0.f;
    o.bench_frames = 0;
    CHECK(play_speed(o) == 0.f);
}

TEST_CASE("studio: Compare shows the new pair once it arrives, with older runs in the list", "[studio_runs]") {
    Studio s(tiny_options());
    set_prompt(s, "older run");
    s.open(true);
    REQUIRE(frames_until(s, [&] { return s.runs.size() == 1 && s.runs[0].history.finished(); }));
    set_prompt(s, "another older run");
    s.restart(true);
    REQUIRE(frames_until(s, [&] { return s.runs.size() == 2 && s.runs[1].history.finished(); }));

    set_prompt(s, "compare me");
    s.start_compare(true, NAN);
    // Every frame until the pair is in: never the two older runs (a panel that picked them would keep them).
    bool saw_old_pair = false;
    REQUIRE(frames_until(s, [&] {
        const ComparePair p = s.compare_pair();
        if (p.a == 0 && p.b == 1) saw_old_pair = true;
        return s.compare_finished();
    }));
    CHECK(!saw_old_pair);
    const ComparePair p = s.compare_pair();
    REQUIRE(p.a >= 0);
    REQUIRE(p.b >= 0);
    CHECK(!p.waiting);
    CHECK(s.runs[size_t(p.a)].label == s.compare_labels[0]);
    CHECK(s.runs[size_t(p.b)].label == s.compare_labels[1]);
    CHECK(s.runs[size_t(p.a)].history.info().method == "original");
    CHECK(s.runs[size_t(p.b)].request.prompt == "compare me");
}

TEST_CASE("studio: the export notice outlives the frames after it was set", "[studio_runs]") {
    Studio s(tiny_options());
    CHECK(std::filesystem::path(s.export_dir).is_absolute());  // the folder field starts at the working directory
    s.show_notice("wrote 7 files to /tmp/somewhere");
    for (int i = 0; i < 5; ++i) {
        s.pump_events(1.0);
        s.begin_frame();
    }
    CHECK(s.notice.visible());
    CHECK(s.notice.text() == "wrote 7 files to /tmp/somewhere");
}

TEST_CASE("studio: the worker reports the weights prepared while loading, all of them once loaded", "[studio_runs]") {
    Studio s(tiny_options());
    s.open(false);
    REQUIRE(frames_until(
        s, [&] { return s.status.state != WorkerState::Loading && s.status.state != WorkerState::NoModel; }));
    const LoadProgress& p = s.status.load;
    CHECK(p.tensors_total > 0);
    CHECK(p.tensors_done == p.tensors_total);
    CHECK(p.bytes_done == p.bytes_total);
    CHECK(p.bytes_total > 0);
}
