// The engine's event stream on a tiny random checkpoint, as the sinks and exporters receive it: kinds and order,
// one saliency record per layer and sequence, salient counts equal to the engine's own accounting
// (Session::step_records), histogram totals = tested rows, balanced op begin/end, and the exports of a real run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/op_scope.h"
#include "engine/version.h"
#include "instrumentation/chrome_trace.h"
#include "instrumentation/jsonl.h"
#include "instrumentation/nvtx_sink.h"
#include "instrumentation/queue_sink.h"
#include "instrumentation/recorder.h"
#include "kernels/cpu/thread_pool.h"
#include "support/tiny_models.h"

using namespace dyllm;

namespace {

std::vector<int32_t> prompt_ids(const ModelConfig& cfg, int n, uint32_t seed) {
    std::vector<int32_t> p;
    uint32_t             x = seed * 2654435761u + 7;
    while (int(p.size()) < n) {
        x               = x * 1664525u + 1013904223u;  // LCG (Numerical Recipes constants)
        const int32_t t = int32_t((x >> 8) % uint32_t(cfg.vocab_size));
        if (t != cfg.mask_id && t != cfg.eos_id && t != cfg.pad_id) p.push_back(t);
    }
    return p;
}

DiffusionParams dyllm_params() {
    DiffusionParams p;
    p.method       = Method::DyLLM;
    p.gen_length   = 16;
    p.steps        = 16;
    p.block_length = 8;
    p.full_steps   = 2;
    p.fullq_every  = 4;
    p.tau          = 0.999f;  // random weights move contexts a lot: a high tau keeps some rows non-salient too
    p.ignore_eos   = true;    // random weights may sample EOS early; the test wants every step
    return p;
}

// Checks balanced on_op_begin / on_op pairs as the engine emits them.
struct OpPairProbe : EventSink {
    int  open = 0, max_open = 0, unmatched_end = 0, begins = 0, ends = 0;
    void on_op_begin(int32_t, int32_t, OpClass) override {
        ++begins;
        max_open = std::max(max_open, ++open);
    }
    void on_op(const OpTiming&) override {
        ++ends;
        if (--open < 0) {
            ++unmatched_end;
            open = 0;
        }
    }
};

// Keeps every op timing it is sent (the op-timer tests).
struct OpCollector : EventSink {
    std::vector<OpTiming> ops;
    void                  on_op(const OpTiming& o) override { ops.push_back(o); }
};

}  // namespace

TEST_CASE("engine events: order, layers, salient counts equal the accounting, histograms", "[trace][engine]") {
    const auto                              fam   = GENERATE(Family::LLaDA, Family::Dream);
    const auto                              dir   = test::make_tiny_checkpoint(fam);
    const auto                              model = Model::load(dir.string(), BackendKind::Cpu, 1);
    const auto&                             cfg   = model->config();
    const std::vector<std::vector<int32_t>> prompts{prompt_ids(cfg, 6, 1), prompt_ids(cfg, 9, 2)};
    const DiffusionParams                   params = dyllm_params();

    RecordingSink rec;
    OpPairProbe   pairs;
    NvtxSink      nvtx;  // range bookkeeping runs in every build: must end balanced on a real run
    TeeSink       tee({&rec, &pairs, &nvtx});
    Session       session(*model, &tee);
    session.start(prompts, params);
    session.run();
    const auto& steps = session.step_records();
    const auto& ev    = rec.events();
    INFO("family " << family_name(fam) << ", " << ev.size() << " events, " << steps.size() << " steps");
    REQUIRE(steps.size() == size_t(params.steps));

    // ---- kinds and order -------------------------------------------------------------------------------------
    REQUIRE(ev.size() > 2);
    CHECK(record_kind(ev.front()) == RecordKind::RunBegin);
    CHECK(record_kind(ev.back()) == RecordKind::RunEnd);
    const auto& rb = std::get<RunBegin>(ev.front());
    CHECK(rb.n_layer == cfg.n_layer);
    CHECK(rb.n_seq == 2);
    CHECK(rb.method == "dyllm");
    CHECK(rb.prompt_lengths == std::vector<int32_t>{6, 9});
    const auto version =
        std::find_if(rb.env.begin(), rb.env.end(), [](const auto& kv) { return kv.first == "dyllm_version"; });
    REQUIRE(version != rb.env.end());
    CHECK(version->second == std::string(dyllm::version()));  // the build's version (CMake), as --version prints it
    CHECK(std::get<RunEnd>(ev.back()).steps == params.steps);

    int32_t                                                    open_step = 0, steps_seen = 0;
    bool                                                       order_ok = true;
    std::map<int32_t, std::vector<const LayerSaliencyRecord*>> sal;  // per step
    std::map<int32_t, int>                                     unmasks, canvases, ops;
    for (size_t i = 1; i + 1 < ev.size(); ++i) {
        const EventRecord& e = ev[i];
        switch (record_kind(e)) {
            case RecordKind::StepBegin: {
                const auto& b = std::get<StepBegin>(e);
                order_ok &= open_step == 0 && b.step == steps_seen + 1;
                CHECK(b.kind == steps[size_t(b.step - 1)].kind);
                open_step = b.step;
                break;
            }
            case RecordKind::StepEnd: {
                const auto& s = std::get<StepEnd>(e);
                order_ok &= s.step == open_step;
                CHECK(s.tokens_committed == steps[size_t(s.step - 1)].tokens_committed);
                CHECK(s.wall_ns >= 0);
                open_step = 0;
                ++steps_seen;
                break;
            }
            case RecordKind::LayerSaliency: {
                const auto& l = std::get<LayerSaliencyRecord>(e);
                order_ok &= l.step == open_step;
                sal[l.step].push_back(&l);
                break;
            }
            case RecordKind::Unmask:
                order_ok &= std::get<UnmaskRecord>(e).step == open_step;
                ++unmasks[open_step];
                break;
            case RecordKind::Canvas:
                order_ok &= std::get<CanvasRecord>(e).step == open_step;
                ++canvases[open_step];
                break;
            case RecordKind::OpTiming: {
                const auto& o = std::get<OpTiming>(e);
                order_ok &= o.step == open_step && o.layer >= -1 && o.layer < cfg.n_layer && o.dur_ns >= 0;
                ++ops[open_step];
                break;
            }
            default:
                order_ok = false;  // RunBegin/RunEnd/Error in the middle
        }
    }
    CHECK(order_ok);
    CHECK(steps_seen == params.steps);
    CHECK(pairs.unmatched_end == 0);
    CHECK(pairs.open == 0);
    CHECK(pairs.begins == pairs.ends);
    CHECK(nvtx.depth() == 0);

    int sparse_checked = 0;
    for (int32_t st = 1; st <= params.steps; ++st) {
        INFO("step " << st << " kind " << step_kind_name(steps[size_t(st - 1)].kind));
        CHECK(unmasks[st] == 2);
        CHECK(canvases[st] == 2);
        CHECK(ops[st] > 0);
        // Step 1 has no previous context; every later DyLLM step reports every layer of every sequence.
        if (st == 1) {
            CHECK(sal[st].empty());
            continue;
        }
        REQUIRE(sal[st].size() == size_t(cfg.n_layer * 2));
        std::map<int32_t, int64_t> salient_per_layer, rows_per_layer;
        for (const auto* l : sal[st]) {
            uint64_t hist_total = 0;
            for (uint32_t h : l->hist) hist_total += h;
            CHECK(hist_total == uint64_t(l->n_rows));
            CHECK(l->salient_positions.size() == size_t(l->n_salient));
            CHECK(l->row_positions.size() == size_t(l->n_rows));
            CHECK(l->cosines.size() == size_t(l->n_rows));
            CHECK(std::is_sorted(l->salient_positions.begin(), l->salient_positions.end()));
            int below = 0;
            for (float c : l->cosines) below += c < l->tau;
            CHECK(below == l->n_salient);  // S_l = {cos < tau}
            salient_per_layer[l->layer] += l->n_salient;
            rows_per_layer[l->layer] += l->n_rows;
        }
        CHECK(salient_per_layer.size() == size_t(cfg.n_layer));
        const StepRecord& sr = steps[size_t(st - 1)];
        REQUIRE(sr.layers.size() == size_t(cfg.n_layer));
        if (sr.kind == StepKind::SparseFullQuery || sr.kind == StepKind::SparseResponse) {
            ++sparse_checked;
            for (int l = 0; l < cfg.n_layer; ++l) {
                INFO("layer " << l);
                // Sparse steps push exactly the salient rows S_l through the FFN and test every query row.
                CHECK(salient_per_layer[l] == sr.layers[size_t(l)].ffn_rows);
                CHECK(rows_per_layer[l] == sr.layers[size_t(l)].query_rows);
                // S_l feeds layer l+1's K/V recomputation.
                if (l + 1 < cfg.n_layer) CHECK(salient_per_layer[l] == sr.layers[size_t(l + 1)].kv_rows);
            }
        }
    }
    CHECK(sparse_checked == params.steps - params.full_steps);  // the accounting check really ran
}

TEST_CASE("cosine bins: the edge table equals 1 + floor(2 (log10(1 - cos) + 7)) on every float cosine tried",
          "[trace]") {
    // The definition the table replaced (events.h), on d = 1 - cos in double.
    auto by_log = [](float c) {
        const double d = 1.0 - double(c);
        if (!(d >= 1e-7)) return 0;
        if (d >= 1.0) return kCosineBins - 1;
        const int b = 1 + int(std::floor((std::log10(d) + 7.0) * 2.0));
        return std::clamp(b, 1, kCosineBins - 2);
    };
    // Where log10's rounding and the edge's decimal literal may disagree: d within 1e-12 of an edge (relative). Float
    // cosines near 1 are 2^-24 apart, so no cosine below lands there; the sweep checks that it never happens either.
    auto near_edge = [](float c) {
        const double d = 1.0 - double(c);
        for (double e : kCosineBinEdges)
            if (std::abs(d / e - 1.0) < 1e-12) return true;
        return false;
    };
    int64_t n = 0, skipped = 0;
    // Every float in [0.999, 1] (16.8k of them: bins 0..8), then d from 1e-3 to 2 in steps of 0.01% (76k).
    for (float c = 0.999f; c <= 1.0f; c = std::nextafter(c, 2.0f), ++n) {
        if (near_edge(c)) {
            ++skipped;
            continue;
        }
        INFO("cos " << c);
        REQUIRE(cosine_bin(c) == by_log(c));
    }
    for (double d = 1e-3; d <= 2.0; d *= 1.0001, ++n) {
        const float c = float(1.0 - d);
        if (near_edge(c)) {
            ++skipped;
            continue;
        }
        INFO("cos " << c);
        REQUIRE(cosine_bin(c) == by_log(c));
    }
    CHECK(n > 90'000);
    CHECK(skipped == 0);
    CHECK(cosine_bin(NAN) == 0);
    CHECK(cosine_bin(1.5f) == 0);
    CHECK(cosine_bin(0.0f) == kCosineBins - 1);
    CHECK(cosine_bin(-1.0f) == kCosineBins - 1);
}

TEST_CASE("engine events through a QueueSink drained by another thread match the recorder", "[trace][engine][queue]") {
    const auto                              dir   = test::make_tiny_checkpoint(Family::LLaDA);
    const auto                              model = Model::load(dir.string(), BackendKind::Cpu, 1);
    const std::vector<std::vector<int32_t>> prompts{prompt_ids(model->config(), 5, 3)};
    QueueSink                               queue(1 << 14);
    RecordingSink                           rec;
    TeeSink                                 tee({&queue, &rec});
    std::atomic<bool>                       done{false};
    std::vector<EventRecord>                drained;
    std::thread                             consumer([&] {
        EventRecord r;
        for (;;) {
            if (queue.pop(r))
                drained.push_back(std::move(r));
            else if (done.load(std::memory_order_acquire)) {
                while (queue.pop(r)) drained.push_back(std::move(r));
                break;
            } else
                std::this_thread::yield();
        }
    });
    Session                                 session(*model, &tee);
    session.start(prompts, dyllm_params());
    session.run();
    done.store(true, std::memory_order_release);
    consumer.join();
    CHECK(queue.dropped() == 0);
    REQUIRE(drained.size() == rec.size());
    for (size_t i = 0; i < drained.size(); ++i) CHECK(record_kind(drained[i]) == record_kind(rec.events()[i]));
    const auto canv = queue.latest_canvases();
    REQUIRE(canv.size() == 1);
    CHECK(canv[0].step == session.current_step());
    CHECK(canv[0].unmask_step == session.result().sequences[0].unmask_step);
}

TEST_CASE("exports of a real run: Chrome trace parses, JSONL round-trips", "[trace][engine]") {
    const auto                              dir   = test::make_tiny_checkpoint(Family::Dream);
    const auto                              model = Model::load(dir.string(), BackendKind::Cpu, 1);
    const std::vector<std::vector<int32_t>> prompts{prompt_ids(model->config(), 7, 4)};
    RecordingSink                           rec;
    Session                                 session(*model, &rec);
    session.start(prompts, dyllm_params());
    session.run();

    std::ostringstream chrome;
    write_chrome_trace(chrome, rec.events());
    const auto j = nlohmann::json::parse(chrome.str());
    CHECK(j["metadata"]["method"] == "dyllm");
    CHECK(j["metadata"]["n_layer"] == model->config().n_layer);
    size_t x_ops = 0;
    for (const auto& e : j["traceEvents"])
        if (e.value("cat", "") == "op") {
            ++x_ops;
            CHECK(e["dur"].get<double>() >= 0.0);
        }
    size_t n_ops = 0;
    for (const auto& e : rec.events()) n_ops += record_kind(e) == RecordKind::OpTiming;
    CHECK(x_ops == n_ops);

    std::ostringstream a, b;
    write_jsonl(a, rec.events());
    std::istringstream in(a.str());
    write_jsonl(b, read_jsonl(in));
    CHECK(a.str() == b.str());
}

TEST_CASE("op timer: short ops share one CPU clock reading per kCpuMarkMaxAgeNs and carry no CPU time",
          "[trace][cpu_time]") {
    OpCollector   sink;
    constexpr int kOps = 200;
    sink.ops.reserve(kOps + 2);  // no reallocation between two ops
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const uint64_t r0 = thread_cpu_clock_reads();
    const int64_t  t0 = steady_now_ns();
    for (int i = 0; i < kOps; ++i) ScopedOp s(&sink, 1, 0, OpClass::Norm, 0, 0, 1);
    const int64_t  wall  = steady_now_ns() - t0;
    const uint64_t reads = thread_cpu_clock_reads() - r0;
    // Empty ops end far below kOpCpuTimeMinNs: no end readings; a start reading only when the last one is older than
    // kCpuMarkMaxAgeNs, so two readings are at least that far apart (the first one is taken after the pause).
    INFO(reads << " reads in " << wall << " ns");
    CHECK(reads >= 1);
    CHECK(reads <= uint64_t(1 + wall / kCpuMarkMaxAgeNs));
    for (const OpTiming& o : sink.ops) CHECK(o.cpu_ns == -1);
    // After a pause longer than kCpuMarkMaxAgeNs an op takes a fresh start reading.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const uint64_t r1 = thread_cpu_clock_reads();
    { ScopedOp s(&sink, 1, 0, OpClass::Norm, 0, 0, 1); }
    CHECK(thread_cpu_clock_reads() - r1 == 1);
    // An op of at least kOpCpuTimeMinNs reads once more at its end and carries its CPU time.
    const uint64_t r2 = thread_cpu_clock_reads();
    {
        ScopedOp          s(&sink, 1, 0, OpClass::Ffn, 0, 0, 1);
        volatile uint64_t x     = 0;
        const int64_t     t_end = steady_now_ns() + 2 * kOpCpuTimeMinNs;
        while (steady_now_ns() < t_end) x = x + 1;
    }
    CHECK(thread_cpu_clock_reads() - r2 >= 1);
    CHECK(thread_cpu_clock_reads() - r2 <= 2);
    CHECK(sink.ops.back().cpu_ns >= 0);  // measured; may read ~0 when preempted on a loaded machine (see below)
}

TEST_CASE("op timer: the CPU time leaves out the work between the start reading and the op", "[trace][cpu_time]") {
    OpCollector sink;
    sink.ops.reserve(4);
    auto spin_ns = [](int64_t ns) {
        volatile uint64_t x     = 0;
        const int64_t     t_end = steady_now_ns() + ns;
        while (steady_now_ns() < t_end) x = x + 1;
    };
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    { ScopedOp s(&sink, 1, 0, OpClass::Norm, 0, 0, 1); }  // a fresh start reading (the mark)
    // 100 us of work outside any op, within the mark's age: the next op reuses the mark and must not count that work.
    static_assert(100'000 < kCpuMarkMaxAgeNs);
    spin_ns(100'000);
    {
        ScopedOp s(&sink, 1, 0, OpClass::Ffn, 0, 0, 1);
        spin_ns(2 * kOpCpuTimeMinNs);
    }
    const OpTiming& o = sink.ops.back();
    INFO("cpu " << o.cpu_ns << " ns, wall " << o.dur_ns << " ns");
    REQUIRE(o.cpu_ns >= 0);
    // Counting the gap would read wall + 100 us. The bound is the 5 ms ops' below (the reads' cost, the clocks'
    // difference): 0.4 ms + 8 + 50 us.
    CHECK(o.cpu_ns <= o.dur_ns + o.dur_ns / 50 + 50'000);
    // The op says how old its start reading was: the 100 us of work and the empty op before it, within the age bound.
    CHECK(o.cpu_gap_ns >= 100'000);
    CHECK(o.cpu_gap_ns <= kCpuMarkMaxAgeNs);
}

TEST_CASE("op timer: thread CPU time beside wall time, split when the pool handed work out", "[trace][cpu_time]") {
    OpCollector sink;
    // Busy for 5 ms of wall time on this thread alone.
    auto spin = [] {
        volatile uint64_t x     = 0;
        const int64_t     t_end = steady_now_ns() + 5'000'000;
        while (steady_now_ns() < t_end) x = x + 1;
    };
    cpu::ThreadPool one(1), two(2);
    {
        ScopedOp s(&sink, 1, 0, OpClass::Ffn, 0, 0, 1);
        spin();
    }
    {
        ScopedOp s(&sink, 1, 0, OpClass::Ffn, 0, 0, 1);
        one.parallel_for(4, [&](int64_t, int) {});  // a pool of one runs inline: not split
        spin();
    }
    {
        ScopedOp s(&sink, 1, 1, OpClass::Ffn, 0, 0, 1);
        two.parallel_for(4, [&](int64_t t, int) {
            if (t == 0) spin();
        });
    }
    {
        ScopedOp s(nullptr, 1, 1, OpClass::Ffn, 0, 0, 1);  // no sink: nothing recorded
        spin();
    }
    REQUIRE(sink.ops.size() == 3);
    for (const OpTiming& o : sink.ops) {
        INFO("cpu " << o.cpu_ns << " ns, wall " << o.dur_ns << " ns");
        CHECK(o.dur_ns >= 5'000'000);
        // Measured (-1: not). Not > 0: a split op's calling thread may hand the spinning task to the other thread
        // and sleep in the pool's wait, and on a loaded machine (ctest -j) a spinning op may be preempted for most
        // of its wall time (seen: 0 ns of 7.9 ms); either reads about 0 once the gap to the start reading is off.
        CHECK(o.cpu_ns >= 0);
        // The CPU reads enclose the wall interval (the gap from an older start reading is taken off), so CPU may
        // exceed wall by the reads' cost (1-2 us each on a VM), and the two come from different kernel clocks:
        // CI under ctest -j read 5.0515 ms of CPU in 5.0011 ms of wall. 2% + 50 us, far below the 5 ms of the op.
        CHECK(o.cpu_ns <= o.dur_ns + o.dur_ns / 50 + 50'000);
    }
    CHECK_FALSE(sink.ops[0].split);
    CHECK_FALSE(sink.ops[1].split);
    CHECK(sink.ops[2].split);
}

TEST_CASE("op timer: every layer's two residual updates are timed ops, in every method", "[trace][engine]") {
    // The residual adds (h += attention output, h += FFN output, or a cache's rows of either) were once outside any
    // op, so the Time panel's ops summed to less than the step and the difference had no name.
    const auto method =
        GENERATE(Method::Original, Method::DyLLM, Method::FastPrefix, Method::FastDual, Method::DllmCache);
    const auto      dir    = test::make_tiny_checkpoint(Family::LLaDA);
    const auto      model  = Model::load(dir.string(), BackendKind::Cpu, 1);
    const auto&     cfg    = model->config();
    DiffusionParams params = dyllm_params();
    params.method          = method;
    OpCollector sink;
    Session     session(*model, &sink);
    session.start({prompt_ids(cfg, 6, 3)}, params);
    session.run();
    INFO("method " << method_name(method));
    std::map<std::pair<int32_t, int32_t>, int> residual;  // (step, layer) -> residual ops
    for (const OpTiming& o : sink.ops)
        if (o.op == OpClass::Residual) {
            ++residual[{o.step, o.layer}];
            CHECK(o.rows > 0);
            CHECK(o.bytes > 0);
            CHECK(o.flops == 0);
        }
    for (int32_t s = 1; s <= params.steps; ++s)
        for (int32_t l = 0; l < cfg.n_layer; ++l) {
            INFO("step " << s << ", layer " << l);
            CHECK(residual[{s, l}] == 2);
        }
    CHECK(residual.size() == size_t(params.steps) * size_t(cfg.n_layer));
}

TEST_CASE("dLLM-Cache queries every row only in steps that refresh the prompt", "[trace][engine][dllm_cache]") {
    // After layer 0 no layer recomputes a prompt row unless the prompt is refreshed, and the sampler reads only
    // response rows (Dream: and the last prompt row, whose logits are the first response position's): the other steps
    // query those rows, and only they get the cached outputs added (engine/README.md §e).
    const auto                              fam   = GENERATE(Family::LLaDA, Family::Dream);
    const auto                              dir   = test::make_tiny_checkpoint(fam);
    const auto                              model = Model::load(dir.string(), BackendKind::Cpu, 1);
    const auto&                             cfg   = model->config();
    const std::vector<std::vector<int32_t>> prompts{prompt_ids(cfg, 6, 1), prompt_ids(cfg, 9, 2)};
    DiffusionParams                         p = dyllm_params();
    // kp 3, kr 2: steps of every kind (both, prompt only, response only, neither).
    p.method = Method::DllmCache;
    p.kp     = 3;
    p.kr     = 2;
    OpCollector   ops;
    RecordingSink rec;
    TeeSink       tee({&rec, &ops});
    Session       session(*model, &tee);
    session.start(prompts, p);
    session.run();
    INFO("family " << family_name(fam));
    const int32_t all = 6 + 9 + 2 * p.gen_length, live = 2 * p.gen_length + (fam == Family::Dream ? 2 : 0);
    int           checked = 0;
    for (const EventRecord& e : rec.events()) {
        if (record_kind(e) != RecordKind::StepBegin) continue;
        const auto& b = std::get<StepBegin>(e);
        INFO("step " << b.step);
        CHECK(b.n_query_rows == ((b.step - 1) % p.kp == 0 ? all : live));
        ++checked;
    }
    CHECK(checked == p.steps);
    // The residual adds after layer 0 of a step that keeps the prompt cover exactly the live rows: one add per
    // sequence's run of rows (two sequences), each attention and FFN output.
    for (const OpTiming& o : ops.ops) {
        if (o.op != OpClass::Residual || o.layer == 0 || (o.step - 1) % p.kp == 0) continue;
        INFO("step " << o.step << ", layer " << o.layer);
        CHECK(o.rows == live / 2);
    }
}
