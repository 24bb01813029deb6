// QueueSink and RecordingSink: every event arrives as the right EventRecord, the drop counter is exact when the
// consumer does not drain, the canvas double buffer serves the newest canvas per sequence, and the wants_* switches
// reach the engine-facing overrides.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "instrumentation/queue_sink.h"
#include "instrumentation/recorder.h"
#include "tests/support/synthetic_run.h"

using namespace dyllm;

namespace {

CanvasSnapshot canvas(int32_t step, int32_t seq, const std::vector<int32_t>& tokens,
                      const std::vector<int32_t>& unmask_step, const std::vector<float>& scores) {
    CanvasSnapshot c;
    c.step        = step;
    c.seq         = seq;
    c.prompt_len  = 1;
    c.tokens      = tokens;
    c.unmask_step = unmask_step;
    c.scores      = scores;
    return c;
}

// Events a synthetic run emits, counted from its spec (the engine's shape documented in events.h).
size_t expected_events(const SyntheticRunSpec& sp, bool ops) {
    const size_t per_step = 2 /*begin, end*/ + size_t(sp.n_layer * sp.n_seq) /*saliency*/ +
                            size_t(2 * sp.n_seq) /*unmask, canvas*/ +
                            (ops ? size_t(3 + 5 * sp.n_layer) : 0) /*embed, lm_head, sampling + 5 per layer*/;
    return 2 /*run begin/end*/ + size_t(sp.steps) * per_step;
}

}  // namespace

TEST_CASE("QueueSink: every event becomes an EventRecord, in order", "[instr][queue]") {
    QueueSink        sink(1 << 12);
    SyntheticRunSpec sp;
    emit_synthetic_run(sink, sp);
    CHECK(sink.dropped() == 0);

    std::vector<EventRecord> got;
    EventRecord              r;
    while (sink.pop(r)) got.push_back(r);
    REQUIRE(got.size() == expected_events(sp, true));
    CHECK(record_kind(got.front()) == RecordKind::RunBegin);
    CHECK(record_kind(got.back()) == RecordKind::RunEnd);
    CHECK(record_kind(got[1]) == RecordKind::StepBegin);

    // Owning copies: the spans of the original events are gone, the records still hold the data.
    size_t canvases = 0, saliency = 0;
    for (const auto& e : got) {
        if (auto* c = std::get_if<CanvasRecord>(&e)) {
            ++canvases;
            CHECK(c->tokens.size() == size_t(sp.prompt_len + sp.gen_length));
            CHECK(c->unmask_step.size() == size_t(sp.gen_length));
        }
        if (auto* l = std::get_if<LayerSaliencyRecord>(&e)) {
            ++saliency;
            CHECK(l->cosines.size() == size_t(l->n_rows));
            CHECK(l->salient_positions.size() == size_t(l->n_salient));
        }
    }
    CHECK(canvases == size_t(sp.steps * sp.n_seq));  // a CanvasRecord for every canvas
    CHECK(saliency == size_t(sp.steps * sp.n_layer * sp.n_seq));
}

TEST_CASE("QueuedRecord: records larger than an op timing travel boxed and come back whole", "[instr][queue]") {
    // A ring slot is an op timing and the variant's index; the two large records are behind pointers.
    STATIC_REQUIRE(sizeof(QueuedRecord) <= sizeof(OpTiming) + 8);
    LayerSaliencyRecord l;
    l.step              = 3;
    l.layer             = 2;
    l.n_rows            = 2;
    l.n_salient         = 1;
    l.row_positions     = {7, 9};
    l.cosines           = {0.5f, 0.999f};
    l.salient_positions = {7};
    l.hist[4]           = 2;
    QueuedRecord q      = to_queued(EventRecord(l));
    REQUIRE(std::holds_alternative<std::unique_ptr<LayerSaliencyRecord>>(q));
    const EventRecord back = from_queued(std::move(q));
    const auto*       lb   = std::get_if<LayerSaliencyRecord>(&back);
    REQUIRE(lb);
    CHECK(lb->step == 3);
    CHECK(lb->layer == 2);
    CHECK(lb->row_positions == l.row_positions);
    CHECK(lb->cosines == l.cosines);
    CHECK(lb->salient_positions == l.salient_positions);
    CHECK(lb->hist == l.hist);

    OpTiming op;
    op.step   = 5;
    op.layer  = 1;
    op.op     = OpClass::Ffn;
    op.dur_ns = 1234;
    op.flops  = 1e6;
    q         = to_queued(EventRecord(op));
    REQUIRE(std::holds_alternative<OpTiming>(q));  // inline: no allocation for the most frequent record
    const EventRecord ob = from_queued(std::move(q));
    REQUIRE(std::holds_alternative<OpTiming>(ob));
    CHECK(std::get<OpTiming>(ob).dur_ns == 1234);
    CHECK(std::get<OpTiming>(ob).op == OpClass::Ffn);

    RunBegin rb;
    rb.method  = "dyllm";
    rb.n_layer = 4;
    rb.env     = {{"tau", "0.99"}};
    q          = to_queued(EventRecord(rb));
    REQUIRE(std::holds_alternative<std::unique_ptr<RunBegin>>(q));
    const EventRecord rbb = from_queued(std::move(q));
    REQUIRE(std::holds_alternative<RunBegin>(rbb));
    CHECK(std::get<RunBegin>(rbb).method == "dyllm");
    CHECK(std::get<RunBegin>(rbb).env == rb.env);
}

TEST_CASE("QueueSink: drop counter is exact when the consumer does not drain", "[instr][queue]") {
    SyntheticRunSpec sp;
    const size_t     total = expected_events(sp, true);
    const size_t     cap   = 50;
    REQUIRE(total > cap);
    QueueSink sink(cap);
    emit_synthetic_run(sink, sp);  // never blocks even though nobody pops
    CHECK(sink.dropped() == total - cap);
    CHECK(sink.queued() == cap);

    // The survivors are the first `cap` events, starting with RunBegin.
    EventRecord r;
    REQUIRE(sink.pop(r));
    CHECK(record_kind(r) == RecordKind::RunBegin);
    size_t n = 1;
    while (sink.pop(r)) ++n;
    CHECK(n == cap);
    // Draining makes room again; the counter keeps its total.
    sink.on_run_end(RunEnd{});
    CHECK(sink.dropped() == total - cap);
    REQUIRE(sink.pop(r));
    CHECK(record_kind(r) == RecordKind::RunEnd);
}

TEST_CASE("QueueSink: canvas double buffer returns the newest canvas per sequence", "[instr][queue][canvas]") {
    QueueSink sink(16);
    CHECK(sink.latest_canvases().empty());
    sink.on_run_begin(RunBegin{});
    sink.on_canvas(canvas(1, 0, {7, 0, 0}, {0, 0}, {0.f, 0.f}));
    sink.on_canvas(canvas(1, 1, {7, 0, 0}, {1, 0}, {0.5f, 0.f}));
    sink.on_canvas(canvas(2, 0, {7, 9, 0}, {2, 0}, {0.9f, 0.f}));
    auto c = sink.latest_canvases();
    REQUIRE(c.size() == 2);
    CHECK(c[0].seq == 0);
    CHECK(c[0].step == 2);  // the newer canvas of sequence 0 replaced step 1's
    CHECK(c[0].tokens == std::vector<int32_t>{7, 9, 0});
    CHECK(c[1].seq == 1);
    CHECK(c[1].step == 1);  // sequence 1 kept its only canvas across the swaps made for sequence 0

    // Many more updates alternate sequences: both buffers must stay in sync with the newest of each.
    for (int32_t st = 3; st <= 40; ++st) sink.on_canvas(canvas(st, st % 2, {st, st, st}, {st, st}, {0.f, 0.f}));
    c = sink.latest_canvases();
    REQUIRE(c.size() == 2);
    CHECK(c[0].step == 40);
    CHECK(c[1].step == 39);
    CHECK(c[1].tokens == std::vector<int32_t>{39, 39, 39});

    // A sequence index seen first late (gaps in between stay absent, not default-filled).
    sink.on_canvas(canvas(41, 4, {1, 2, 3}, {41, 41}, {0.f, 0.f}));
    c = sink.latest_canvases();
    REQUIRE(c.size() == 3);
    CHECK(c[2].seq == 4);

    // A new run forgets the previous run's canvases.
    sink.on_run_begin(RunBegin{});
    CHECK(sink.latest_canvases().empty());
}

TEST_CASE("QueueSink: canvas reader on another thread only ever sees whole, monotone canvases",
          "[instr][queue][threads]") {
    QueueSink            sink(4);  // tiny ring: most events drop, the canvas path must not care
    std::atomic<bool>    done{false};
    std::atomic<int>     torn{0}, backwards{0};
    std::thread          reader([&] {
        int32_t last = 0;
        while (!done.load(std::memory_order_acquire)) {
            for (const auto& c : sink.latest_canvases()) {
                // Each canvas is written with every field equal to its step: a mix means a torn read.
                for (int32_t t : c.tokens)
                    if (t != c.step) ++torn;
                if (c.step < last) ++backwards;
                last = c.step;
            }
        }
    });
    std::vector<int32_t> tok(64), um(32);
    std::vector<float>   sc(32, 0.f);
    for (int32_t st = 1; st <= 20000; ++st) {
        std::fill(tok.begin(), tok.end(), st);
        std::fill(um.begin(), um.end(), st);
        sink.on_canvas(canvas(st, 0, tok, um, sc));
    }
    done.store(true, std::memory_order_release);
    reader.join();
    CHECK(torn == 0);
    CHECK(backwards == 0);
    REQUIRE(sink.latest_canvases().size() == 1);
    CHECK(sink.latest_canvases()[0].step == 20000);
    CHECK(sink.dropped() == 20000 - 4);
}

TEST_CASE("QueueSink: wants_cosines / wants_op_timings switches", "[instr][queue]") {
    QueueSink sink;
    CHECK(sink.capacity() == (1u << 16));
    CHECK(sink.wants_cosines());
    CHECK(sink.wants_op_timings());
    sink.set_wants_cosines(false);
    sink.set_wants_op_timings(false);
    const EventSink& base = sink;  // the engine sees them through the interface
    CHECK_FALSE(base.wants_cosines());
    CHECK_FALSE(base.wants_op_timings());

    SyntheticRunSpec sp;
    emit_synthetic_run(sink, sp);
    EventRecord r;
    size_t      n = 0, ops = 0;
    while (sink.pop(r)) {
        ++n;
        if (record_kind(r) == RecordKind::OpTiming) ++ops;
        if (auto* l = std::get_if<LayerSaliencyRecord>(&r)) CHECK(l->cosines.empty());
    }
    CHECK(ops == 0);
    CHECK(n == expected_events(sp, false));
}

TEST_CASE("RecordingSink: keeps the whole run; snapshot while a producer appends; clear", "[instr][recorder]") {
    RecordingSink    rec;
    SyntheticRunSpec sp;
    sp.steps      = 16;
    sp.gen_length = 32;
    std::atomic<bool> done{false};
    size_t            max_seen  = 0;
    bool              prefix_ok = true;
    std::thread       reader([&] {
        while (!done.load(std::memory_order_acquire)) {
            auto snap = rec.snapshot();
            // A snapshot is always a prefix of the run: it starts with RunBegin and never shrinks.
            if (!snap.empty() && record_kind(snap.front()) != RecordKind::RunBegin) prefix_ok = false;
            if (snap.size() < max_seen) prefix_ok = false;
            max_seen = std::max(max_seen, snap.size());
        }
    });
    emit_synthetic_run(rec, sp);
    done.store(true, std::memory_order_release);
    reader.join();
    CHECK(prefix_ok);
    CHECK(rec.size() == expected_events(sp, true));
    CHECK(rec.events().size() == rec.size());
    CHECK(record_kind(rec.events().back()) == RecordKind::RunEnd);
    rec.clear();
    CHECK(rec.size() == 0);
    CHECK(rec.snapshot().empty());
}
