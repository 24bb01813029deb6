// The studio's cost views and exports from synthetic event streams: FLOPs and time per step kind (the Why tab), the
// paper-regime preset, duration histograms, Compare per op name, op names and CPU state in the exports, the trace
// without the waits between steps, the key routing and the slowed tau drag (no window needed).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/model/csv_export.h"
#include "app/model/duration_histogram.h"
#include "app/model/fine_drag.h"
#include "app/model/key_routing.h"
#include "app/model/op_annotations.h"
#include "app/model/op_name_diff.h"
#include "app/model/paper_preset.h"
#include "app/model/step_kind_costs.h"
#include "instrumentation/chrome_trace.h"
#include "instrumentation/jsonl.h"

using namespace dyllm;
using namespace dyllm::app;
using nlohmann::json;

namespace {

constexpr int kD = 16, kFf = 32;

OpTiming gemm(int step, int layer, OpClass c, int rows, int n, int k, int64_t t_ns, int64_t dur_ns) {
    OpTiming o;
    o.step       = step;
    o.layer      = layer;
    o.op         = c;
    o.rows       = rows;
    o.flops      = 2.0 * rows * n * k;
    o.t_begin_ns = t_ns;
    o.dur_ns     = dur_ns;
    return o;
}

// A 1-layer run of `kinds.size()` steps; step k (1-based) has kind kinds[k-1], `flops[k-1]` FLOPs and a wall time of
// k ms, starts at k x 100 ms (the play pacing waits between steps) and runs one FFN (gate, up, silu_mul, down) whose
// down projection is preempted in step 2 (20 ms of wall on 1 ms of CPU).
std::vector<EventRecord> run_of(const char* method, const std::vector<StepKind>& kinds,
                                const std::vector<double>& flops) {
    std::vector<EventRecord> ev;
    RunBegin                 rb;
    rb.method         = method;
    rb.n_layer        = 1;
    rb.n_seq          = 1;
    rb.gen_length     = int32_t(kinds.size());
    rb.steps          = int32_t(kinds.size());
    rb.prompt_lengths = {4};
    rb.env            = {{"n_embd", std::to_string(kD)}};
    ev.push_back(rb);
    for (int k = 1; k <= int(kinds.size()); ++k) {
        const int64_t t0 = int64_t(k) * 100'000'000;
        StepBegin     sb;
        sb.step = k;
        sb.kind = kinds[size_t(k - 1)];
        sb.t_ns = t0;
        ev.push_back(sb);
        ev.push_back(gemm(k, 0, OpClass::Ffn, 4, kFf, kD, t0 + 10'000, 100'000));   // gate
        ev.push_back(gemm(k, 0, OpClass::Ffn, 4, kFf, kD, t0 + 120'000, 100'000));  // up
        OpTiming silu = gemm(k, 0, OpClass::Ffn, 4, 0, 0, t0 + 230'000, 10'000);    // silu_mul
        silu.flops    = 0;
        ev.push_back(silu);
        OpTiming down = gemm(k, 0, OpClass::Ffn, 4, kD, kFf, t0 + 250'000, k == 2 ? 20'000'000 : 300'000);
        down.cpu_ns   = k == 2 ? 1'000'000 : 290'000;  // step 2: preempted (wall far above CPU)
        ev.push_back(down);
        StepEnd se;
        se.step             = k;
        se.wall_ns          = int64_t(k) * 1'000'000 + (k == 2 ? 20'000'000 : 0);
        se.t_ns             = t0 + se.wall_ns;
        se.flops            = flops[size_t(k - 1)];
        se.dense_flops      = 1000;
        se.tokens_committed = 1;
        ev.push_back(se);
    }
    RunEnd re;
    re.steps = int32_t(kinds.size());
    ev.push_back(re);
    return ev;
}

RunHistory fold(const std::vector<EventRecord>& ev) {
    RunHistory h;
    for (const auto& e : ev) h.apply(e);
    return h;
}

using K = StepKind;

}  // namespace

TEST_CASE("step kind costs: FLOPs and time per kind and cumulative over the steps, from the step records",
          "[app][costs]") {
    // Fast-dLLM's shape: a refresh at each block start (steps 1 and 3), cached steps between.
    const RunHistory fast = fold(run_of("fast-dual", {K::BlockRefresh, K::BlockCached, K::BlockRefresh, K::BlockCached},
                                        {1000, 100, 1000, 100}));
    const StepKindCosts c = step_kind_costs(fast);
    CHECK(c.method == "fast-dual");
    REQUIRE(c.steps == 4);
    CHECK(c.by_kind[size_t(K::BlockRefresh)].steps == 2);
    CHECK(c.by_kind[size_t(K::BlockRefresh)].flops == 2000);
    CHECK(c.by_kind[size_t(K::BlockRefresh)].seconds == Approx(1e-3 + 3e-3));
    CHECK(c.by_kind[size_t(K::BlockCached)].steps == 2);
    CHECK(c.by_kind[size_t(K::BlockCached)].seconds == Approx(22e-3 + 4e-3));  // step 2's 20 ms preemption included
    CHECK(c.by_kind[size_t(K::Full)].steps == 0);
    CHECK(c.flops == 2200);
    CHECK(c.dense_flops == 4000);
    CHECK(c.cum_flops == std::vector<double>{1000, 1100, 2100, 2200});
    CHECK(c.cum_seconds.back() == Approx(c.seconds));
    CHECK(c.seconds == Approx(30e-3));  // the step wall times only: never the 100 ms of pacing between steps
    CHECK(cumulative_at(c, c.cum_flops, 0) == 0);
    CHECK(cumulative_at(c, c.cum_flops, 2) == 1100);
    CHECK(cumulative_at(c, c.cum_flops, 99) == 2200);

    // DyLLM's shape: one dense step, then sparse steps, a full-query one at step 3.
    const RunHistory dy =
        fold(run_of("dyllm", {K::Full, K::SparseResponse, K::SparseFullQuery, K::SparseResponse}, {1000, 50, 400, 50}));
    const StepKindCosts d = step_kind_costs(dy);
    CHECK(d.by_kind[size_t(K::SparseFullQuery)].flops == 400);
    // FLOPs: equal after step 1, fast-dual above from step 2 on (1100 > 1050) and for good.
    CHECK(overtakes_from(c, c.cum_flops, d, d.cum_flops) == 2);
    CHECK(overtakes_from(d, d.cum_flops, c, c.cum_flops) == -1);

    // A step without its StepEnd adds nothing (its cost is not known).
    auto partial = run_of("dyllm", {K::Full, K::SparseResponse}, {1000, 50});
    partial.erase(std::remove_if(partial.begin(), partial.end(),
                                 [](const EventRecord& r) {
                                     const auto* e = std::get_if<StepEnd>(&r);
                                     return e && e->step == 2;
                                 }),
                  partial.end());
    const StepKindCosts p = step_kind_costs(fold(partial));
    CHECK(p.steps == 1);
    CHECK(p.step == std::vector<int32_t>{1});
    CHECK(step_kind_costs(RunHistory{}).steps == 0);

    // CSV: one row per kind some run ran, then the totals.
    const std::string csv = step_kind_costs_csv({&c, &d});
    CHECK(csv.rfind("step_kind,fast-dual_steps,fast-dual_gflop,fast-dual_ms,dyllm_steps,dyllm_gflop,dyllm_ms\n", 0) ==
          0);
    CHECK(csv.find("\nblock-refresh,2,2e-06,4,0,0,0\n") != std::string::npos);
    CHECK(csv.find("\nsparse-fullq,0,0,0,1,4e-07,3\n") != std::string::npos);
    CHECK(csv.find("\ndkv-refresh") == std::string::npos);
    CHECK(csv.find("\ntotal,4,2.2e-06,30,4,1.5e-06,30\n") != std::string::npos);
}

TEST_CASE("paper-regime preset: gen 256 in blocks of 32, n_u 1/2/4, a 4-shot task item", "[app][costs]") {
    CHECK(kPaperRegime.gen_length == 256);
    CHECK(kPaperRegime.block_length == 32);
    CHECK(kPaperRegime.gen_length / kPaperRegime.block_length > 1);  // several blocks: Fast-dLLM refreshes each
    CHECK(paper_regime_steps(1) == 256);
    CHECK(paper_regime_steps(4) == 64);
    CHECK(paper_regime_nu_ok(2));
    CHECK_FALSE(paper_regime_nu_ok(3));
    std::vector<TaskItem> items(4);
    items[0] = {"Q: rev abc", "cba", "rev", 4, "rev.jsonl:5"};
    items[1] = {"Q: add 1+2", "3", "add", 0, "add.jsonl:1"};
    items[2] = {"Q: ...\nQ: add 4+5", "9", "add", 4, "add.jsonl:5"};
    items[3] = {"Q: ...\nQ: add 6+7", "13", "add", 4, "add.jsonl:10"};
    CHECK(paper_regime_item(items) == 2);          // the first 4-shot add item
    CHECK(paper_regime_item(items, "sort") == 0);  // no sort item: the first 4-shot item of any task
    items.resize(2);
    items[0].shots = 1;
    CHECK(paper_regime_item(items) == -1);
}

TEST_CASE("duration histogram: log bins from min to max, the samples of one op", "[app][costs]") {
    const std::vector<double> s = {1e-6, 2e-6, 1.2e-5, 1e-4, 1e-4};
    const DurationHistogram   h = duration_histogram(s, 4);  // 1 to 100 us: each bin a factor 100^(1/4) = 3.16
    REQUIRE(h.counts.size() == 4);
    CHECK(h.total == 5);
    CHECK(h.lo_s == 1e-6);
    CHECK(h.hi_s == 1e-4);
    CHECK(h.bin_lo(0) == Approx(1e-6));
    CHECK(h.bin_hi(3) == Approx(1e-4));
    CHECK(h.bin_lo(2) == Approx(1e-5));
    // 1 and 2 us in bin 0 ([1, 3.16) us), 12 us in bin 2 ([10, 31.6) us), the two 100 us maxima in the last bin.
    CHECK(h.counts == std::vector<int>{2, 0, 1, 2});
    CHECK(h.bin_of(1e-4) == 3);
    CHECK(h.bin_of(1e-9) == 0);  // below the range: clamped
    CHECK(duration_histogram(std::vector<double>{}, 8).counts.empty());
    const DurationHistogram same = duration_histogram(std::vector<double>{5e-6, 5e-6, 5e-6}, 8);
    CHECK(same.counts == std::vector<int>{3});  // every sample equal: one bin
    CHECK(duration_histogram(std::vector<double>{0, 0}, 8).counts == std::vector<int>{2});

    // One op's samples from a run: the down projection of every step, step 2's flagged preempted.
    const RunHistory  r = fold(run_of("original", {K::Full, K::Full, K::Full}, {1, 1, 1}));
    std::vector<bool> pre;
    const auto        down = op_durations(r, 1, 3, OpName::Down, -2, false, &pre);
    REQUIRE(down.size() == 3);
    CHECK(down[0] == Approx(300e-6));
    CHECK(down[1] == Approx(20e-3));
    CHECK(down[2] == Approx(300e-6));
    CHECK(pre == std::vector<bool>{false, true, false});
    CHECK(op_durations(r, 1, 3, OpName::Down, -2, true).size() == 2);  // preempted left out
    CHECK(op_durations(r, 1, 3, OpName::Gate, 0).size() == 3);
    CHECK(op_durations(r, 1, 3, OpName::Gate, 1).empty());
    CHECK(op_durations(r, 2, 2, OpName::Count, -2).size() == 1);  // outside ops: one per ended step
}

TEST_CASE("compare per op name and per layer: both runs' rows joined", "[app][costs]") {
    const RunHistory a    = fold(run_of("original", {K::Full, K::Full}, {1, 1}));
    const RunHistory b    = fold(run_of("dyllm", {K::Full}, {1}));
    const auto       rows = op_name_diff(a, b, false);
    auto             find = [&](const std::vector<OpNameDiff>& v, const std::string& l) -> const OpNameDiff* {
        for (const auto& d : v)
            if (d.label == l) return &d;
        return nullptr;
    };
    const OpNameDiff* down = find(rows, "down");
    REQUIRE(down);
    CHECK(down->count_a == 2);
    CHECK(down->count_b == 1);
    CHECK(down->total_a == Approx(20.3e-3));
    CHECK(down->total_b == Approx(0.3e-3));
    CHECK(down->ratio == Approx(0.3 / 20.3));
    REQUIRE(find(rows, "gate"));
    CHECK(find(rows, "gate")->median_a == Approx(100e-6));
    CHECK_FALSE(find(rows, "ffn"));  // op names, not the engine's class
    const auto layers = op_name_diff(a, b, true);
    REQUIRE(find(layers, "up L0"));
    CHECK(find(layers, "up L0")->count_b == 1);
}

TEST_CASE("exports keep op names, CPU time and the preempted flag; the trace can cut the waits between steps",
          "[app][costs]") {
    const auto       ev = run_of("dyllm", {K::Full, K::SparseResponse, K::SparseResponse}, {1000, 50, 50});
    const RunHistory h  = fold(ev);

    const ExportOptions opt = export_options(h, true);
    REQUIRE(opt.ops.size() == 12);
    CHECK(opt.ops[0].name == "gate");
    CHECK(opt.ops[1].name == "up");
    CHECK(opt.ops[2].name == "silu_mul");
    CHECK(opt.ops[3].name == "down");
    CHECK_FALSE(opt.ops[3].preempted);
    CHECK(opt.ops[7].preempted);  // step 2's down

    std::ostringstream csv;
    write_ops_csv(csv, h, 2);
    const std::string t = csv.str();
    CHECK(t.rfind("step,layer,op,device,t_begin_ns,dur_ns,flops,bytes,rows,name,cpu_ns,cpu_gap_ns,split,cpu_state\n",
                  0) == 0);
    CHECK(t.find(",ffn,") != std::string::npos);
    CHECK(t.find(",gate,,,,unmeasured\n") != std::string::npos);          // a short op: no CPU time
    CHECK(t.find(",down,1000000,0,0,preempted\n") != std::string::npos);  // 20 ms of wall on 1 ms of CPU

    // Chrome trace: the op's model name as the slice name, its class beside it, the flag where a CPU time is.
    std::ostringstream os;
    write_chrome_trace(os, ev, {}, opt);
    const json          j = json::parse(os.str());
    std::vector<json>   ops;
    const json*         run = nullptr;
    std::vector<double> step_ts;
    for (const auto& e : j["traceEvents"]) {
        if (e.value("cat", "") == "op") ops.push_back(e);
        if (e.value("cat", "") == "run" && e.value("ph", "") == "X") run = &e;
        if (e.value("cat", "") == "step") step_ts.push_back(e["ts"].get<double>());
    }
    REQUIRE(ops.size() == 12);
    CHECK(std::count_if(ops.begin(), ops.end(), [](const json& e) { return e["name"] == "gate"; }) == 3);
    CHECK(std::count_if(ops.begin(), ops.end(), [](const json& e) { return e["name"] == "ffn"; }) == 0);
    CHECK(std::all_of(ops.begin(), ops.end(), [](const json& e) { return e["args"]["class"] == "ffn"; }));
    const auto pre = std::find_if(ops.begin(), ops.end(), [](const json& e) {
        return e["args"].contains("preempted") && e["args"]["preempted"].get<bool>();
    });
    REQUIRE(pre != ops.end());
    CHECK((*pre)["name"] == "down");
    CHECK((*pre)["args"]["cpu_ns"] == 1000000);
    // The run slice covers the work: steps of 1, 22 and 3 ms back to back, the 100 ms pacing gaps cut.
    REQUIRE(run);
    CHECK((*run)["dur"].get<double>() == Approx(26e3));
    CHECK(j["metadata"]["step_gaps_closed"] == true);
    CHECK(j["metadata"]["paused_ns"] == (100 - 1 + 100 - 22) * int64_t(1'000'000));
    REQUIRE(step_ts.size() == 3);
    CHECK(step_ts[1] - step_ts[0] == Approx(1e3));  // step 2 starts where step 1 ended
    // Without the options: class names and the wall-clock timeline, as before.
    std::ostringstream plain;
    write_chrome_trace(plain, ev, {});
    const json p = json::parse(plain.str());
    for (const auto& e : p["traceEvents"])
        if (e.value("cat", "") == "run" && e.value("ph", "") == "X") CHECK(e["dur"].get<double>() == Approx(203e3));
    CHECK_FALSE(p["metadata"].contains("paused_ns"));
    // A name list of another run (wrong count) is ignored rather than misnaming ops.
    ExportOptions wrong = opt;
    wrong.ops.pop_back();
    std::ostringstream w;
    write_chrome_trace(w, ev, {}, wrong);
    CHECK(w.str().find("\"name\":\"gate\"") == std::string::npos);

    // JSONL: name and preempted beside the class; read_jsonl skips them and the events come back.
    std::ostringstream jl;
    write_jsonl(jl, ev, export_options(h, false));
    CHECK(jl.str().find("\"op\":\"ffn\"") != std::string::npos);
    CHECK(jl.str().find("\"name\":\"down\"") != std::string::npos);
    CHECK(jl.str().find("\"preempted\":true") != std::string::npos);
    std::istringstream in(jl.str());
    const auto         back = read_jsonl(in);
    std::ostringstream again, orig;
    write_jsonl(again, back);
    write_jsonl(orig, ev);
    CHECK(again.str() == orig.str());
}

TEST_CASE("key routing: typing and the navigation mode take the keys they need", "[app][costs]") {
    const KeyContext idle{}, typing{true, false, false}, nav{false, true, false}, chord{false, false, true};
    for (StudioKey k : {StudioKey::Space, StudioKey::Arrow, StudioKey::Letter}) {
        CHECK(studio_takes(k, idle));
        CHECK_FALSE(studio_takes(k, typing));
        CHECK_FALSE(studio_takes(k, chord));
    }
    CHECK_FALSE(studio_takes(StudioKey::Space, nav));
    CHECK_FALSE(studio_takes(StudioKey::Arrow, nav));
    CHECK(studio_takes(StudioKey::Letter, nav));  // N, R, digits stay the studio's
    // Tab on, Escape or a click off; inside a text field both keys belong to the field.
    CHECK(keyboard_nav_next(false, true, false, false, false));
    CHECK_FALSE(keyboard_nav_next(false, true, false, false, true));
    CHECK(keyboard_nav_next(true, false, false, false, false));
    CHECK_FALSE(keyboard_nav_next(true, false, true, false, false));
    CHECK(keyboard_nav_next(true, false, true, false, true));
    CHECK_FALSE(keyboard_nav_next(true, false, false, true, false));
}

TEST_CASE("fine drag: a tenth of the pointer's motion while the modifier is held, no jump when it changes",
          "[app][costs]") {
    FineDrag d;
    CHECK(d.pointer_x(100, false, false) == 100);  // not dragging: the real pointer
    CHECK(d.pointer_x(100, false, true) == 100);   // the drag starts where the click is
    CHECK(d.pointer_x(120, false, true) == 120);   // coarse: as the pointer
    CHECK(d.pointer_x(120, true, true) == 120);    // Shift pressed: re-anchored, no jump
    CHECK(d.pointer_x(170, true, true) == Approx(125));
    CHECK(d.fine());
    CHECK(d.pointer_x(170, false, true) == Approx(125));  // released: continues from 125
    CHECK(d.pointer_x(180, false, true) == Approx(135));
    CHECK(d.pointer_x(300, false, false) == 300);  // the drag ended
    CHECK(d.pointer_x(10, true, true) == 10);      // a new drag starts at its click, fine from there
    CHECK(d.pointer_x(0, true, true) == Approx(9));
}

TEST_CASE("op labels parse back to their Op stats row (--select-op)", "[app][costs]") {
    int name = -9, layer = -9;
    CHECK(parse_op_label("gate", &name, &layer));
    CHECK((name == int(OpName::Gate) && layer == -2));
    CHECK(parse_op_label("down L3", &name, &layer));
    CHECK((name == int(OpName::Down) && layer == 3));
    CHECK(parse_op_label("outside ops", &name, &layer));
    CHECK((name == int(OpName::Count) && layer == -1));
    CHECK(parse_op_label("attn_exact L12", nullptr, nullptr));
    CHECK_FALSE(parse_op_label("ffn", nullptr, nullptr));  // a class, not an op name
    CHECK_FALSE(parse_op_label("gate L", nullptr, nullptr));
    CHECK_FALSE(parse_op_label("gate Lx", nullptr, nullptr));
    CHECK_FALSE(parse_op_label("", nullptr, nullptr));
}
