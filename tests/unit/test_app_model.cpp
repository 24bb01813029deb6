// app/model aggregation from synthetic event sequences: per-step history, token saliency history, canvas replay,
// summaries, comparison, CSV export, task examples and the layout (no window needed).
#include <catch2/catch.hpp>

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/model/axis_ticks.h"
#include "app/model/canvas_chips.h"
#include "app/model/colormap.h"
#include "app/model/compare_pick.h"
#include "app/model/csv_export.h"
#include "app/model/decoded_text.h"
#include "app/model/engine_threads.h"
#include "app/model/layout.h"
#include "app/model/op_diff.h"
#include "app/model/run_compare.h"
#include "app/model/run_history.h"
#include "app/model/run_list.h"
#include "app/model/frame_throttle.h"
#include "app/model/task_examples.h"
#include "app/model/timed_notice.h"
#include "app/model/utf8_sequence.h"
#include "app/model/vocab.h"

using namespace dyllm;
using namespace dyllm::app;

namespace {

// A 2-layer, 1-sequence run: prompt of 3 tokens, 4 response positions, 4 steps (1 FULL, then 3 sparse-response),
// one token unmasked per step in the order 2, 0, 3, 1.
std::vector<EventRecord> synthetic_run(const char* method = "dyllm", double step_ms = 10.0, int32_t last_token = 13) {
    std::vector<EventRecord> ev;
    RunBegin                 rb;
    rb.method         = method;
    rb.model          = "synthetic";
    rb.family         = "llada";
    rb.backend        = "cpu";
    rb.n_layer        = 2;
    rb.n_seq          = 1;
    rb.gen_length     = 4;
    rb.steps          = 4;
    rb.prompt_lengths = {3};
    rb.env            = {{"tau", "0.99"}};
    ev.push_back(rb);
    const int32_t order[4] = {2, 0, 3, 1};
    for (int k = 1; k <= 4; ++k) {
        StepBegin sb;
        sb.step         = k;
        sb.kind         = k == 1 ? StepKind::Full : StepKind::SparseResponse;
        sb.tau          = 0.99f;
        sb.n_query_rows = k == 1 ? 7 : 4;
        ev.push_back(sb);
        for (int l = 0; l < 2; ++l) {
            OpTiming ffn;
            ffn.step   = k;
            ffn.layer  = l;
            ffn.op     = OpClass::Ffn;
            ffn.dur_ns = 3'000'000;
            ffn.rows   = 2;
            ev.push_back(ffn);
            OpTiming at = ffn;
            at.op       = OpClass::AttnExact;
            at.dur_ns   = 1'000'000;
            ev.push_back(at);
            if (k > 1) {
                // Sparse step: the 4 response rows (sequence positions 3..6) are tested; position 3 + order[k-2]
                // (unmasked last step) is salient at layer 0, and also position 6 at layer 1.
                LayerSaliencyRecord r;
                r.step              = k;
                r.layer             = l;
                r.seq               = 0;
                r.n_rows            = 4;
                r.tau               = 0.99f;
                r.row_positions     = {3, 4, 5, 6};
                r.cosines           = {0.999f, 0.95f, 0.9999f, 0.5f};
                r.salient_positions = {3 + order[k - 2]};
                if (l == 1 && 3 + order[k - 2] != 6) r.salient_positions.push_back(6);
                std::sort(r.salient_positions.begin(), r.salient_positions.end());
                r.n_salient = int32_t(r.salient_positions.size());
                for (float c : r.cosines) r.hist[size_t(cosine_bin(c))]++;
                r.ffn_rows = r.n_salient;
                ev.push_back(r);
            }
        }
        ev.push_back(UnmaskRecord{
            .step      = k,
            .seq       = 0,
            .positions = {order[k - 1]},
            .tokens    = {k == 4 ? last_token : 10 + k},
            .scores    = {0.5f + 0.1f * k},
        });
        StepEnd se;
        se.step             = k;
        se.wall_ns          = int64_t(step_ms * 1e6);
        se.tokens_committed = 1;
        se.masked_left      = 4 - k;
        se.dense_rows       = 2 * 7;  // 7 rows x 2 layers
        se.ffn_rows         = k == 1 ? 14 : 3;
        se.flops            = k == 1 ? 1000 : 250;
        se.dense_flops      = 1000;
        ev.push_back(se);
    }
    RunEnd re;
    re.steps   = 4;
    re.wall_ns = int64_t(4 * step_ms * 1e6);
    re.tokens  = 4;
    ev.push_back(re);
    return ev;
}

RunHistory fold(const std::vector<EventRecord>& ev) {
    RunHistory h;
    for (const auto& e : ev) h.apply(e);
    return h;
}

}  // namespace

TEST_CASE("run history keeps one record per step with kind, tau, ops and saliency", "[app_model]") {
    const RunHistory h = fold(synthetic_run());
    REQUIRE(h.has_run());
    REQUIRE(h.finished());
    REQUIRE(h.step_count() == 4);
    REQUIRE(h.steps_ended() == 4);
    CHECK(h.step(1)->kind == StepKind::Full);
    CHECK(h.step(2)->kind == StepKind::SparseResponse);
    CHECK(h.step(3)->tau == Approx(0.99f));
    CHECK(h.step(1)->ops.size() == 4);
    CHECK(h.step(2)->op_seconds[size_t(OpClass::Ffn)] == Approx(0.006));
    CHECK(h.step(2)->op_seconds[size_t(OpClass::AttnExact)] == Approx(0.002));
    // FULL step sent no saliency; sparse steps have both layers.
    CHECK(h.step(1)->layer(0, 0) == nullptr);
    CHECK(h.step(1)->salient_count(0, 1) == -1);
    REQUIRE(h.step(2)->layer(0, 1) != nullptr);
    CHECK(h.step(2)->salient_count(0, 0) == 1);
    CHECK(h.step(2)->salient_count(0, 1) == 2);
    CHECK(h.step(0) == nullptr);
    CHECK(h.step(5) == nullptr);
}

TEST_CASE("canvas replay follows the unmask steps", "[app_model]") {
    const RunHistory h  = fold(synthetic_run());
    auto             c0 = h.canvas_at(0, 0);
    REQUIRE(c0.size() == 4);
    for (const auto& cell : c0) CHECK(cell.masked());
    auto c2 = h.canvas_at(0, 2);
    CHECK(!c2[2].masked());
    CHECK(c2[2].token == 11);
    CHECK(c2[2].unmask_step == 1);
    CHECK(!c2[0].masked());
    CHECK(c2[0].unmask_step == 2);
    CHECK(c2[3].masked());
    CHECK(c2[1].masked());
    CHECK(h.masked_at(0, 2) == 2);
    CHECK(h.masked_at(0, 4) == 0);
    CHECK(h.tokens(0)[1].token == 13);
    CHECK(h.tokens(0)[1].score == Approx(0.9f));
}

TEST_CASE("token saliency history is steps x layers", "[app_model]") {
    const RunHistory h = fold(synthetic_run());
    // Response position 2 = sequence position 5: unmasked at step 1, so salient at step 2 layer 0 (initial set).
    const auto g = h.token_saliency(0, 2);
    REQUIRE(g.steps == 4);
    REQUIRE(g.layers == 2);
    CHECK(g.at(1, 0) == TokenSal::NotTested);  // FULL step: no saliency events
    CHECK(g.at(2, 0) == TokenSal::Salient);
    CHECK(g.at(3, 0) == TokenSal::Stable);
    CHECK(g.cos_at(3, 0) == Approx(0.9999f));
    CHECK(std::isnan(g.cos_at(1, 0)));
    // Response position 3 = sequence position 6 is salient at layer 1 in every sparse step.
    const auto g3 = h.token_saliency(0, 3);
    CHECK(g3.at(2, 1) == TokenSal::Salient);
    CHECK(g3.at(3, 1) == TokenSal::Salient);
    CHECK(g3.at(3, 0) == TokenSal::Stable);
}

TEST_CASE("summaries: tokens/s, FLOPs and rows recomputed", "[app_model]") {
    const RunHistory h = fold(synthetic_run("dyllm", 10.0));
    const RunSummary s = h.summary();
    CHECK(s.steps == 4);
    CHECK(s.forward_passes == 4);
    CHECK(s.tokens_committed == 4);
    CHECK(s.denoise_seconds == Approx(0.04));
    CHECK(s.tokens_per_s == Approx(100.0));  // 4 tokens / 0.04 s
    CHECK(s.flops == Approx(1750));
    CHECK(s.flops_fraction == Approx(1750.0 / 4000.0));
    CHECK(s.ffn_rows == 14 + 3 * 3);
    CHECK(s.recompute_fraction == Approx(23.0 / 56.0));
    REQUIRE(s.layer_recompute_fraction.size() == 2);
    // Layer 0: 7 rows (FULL) + 1 + 1 + 1 over 4 x 7; layer 1: 7 + 2 + 2 + 1 (step 4 salient set is {6} only).
    CHECK(s.layer_recompute_fraction[0] == Approx(10.0 / 28.0));
    CHECK(s.layer_recompute_fraction[1] == Approx(12.0 / 28.0));
    CHECK(s.steps_by_kind[size_t(StepKind::Full)] == 1);
    CHECK(s.steps_by_kind[size_t(StepKind::SparseResponse)] == 3);
    CHECK(s.op_seconds[size_t(OpClass::Ffn)] == Approx(0.024));
    // Up to step 2 only.
    const RunSummary s2 = h.summary(2);
    CHECK(s2.steps == 2);
    CHECK(s2.tokens_per_s == Approx(2 / 0.02));
}

TEST_CASE("a second RunBegin starts a fresh history; dropped unmask events are filled from canvases", "[app_model]") {
    auto ev = synthetic_run();
    // Drop the unmask event of step 3 and deliver a canvas snapshot after it instead.
    ev.erase(std::remove_if(ev.begin(), ev.end(),
                            [](const EventRecord& e) {
                                auto* u = std::get_if<UnmaskRecord>(&e);
                                return u && u->step == 3;
                            }),
             ev.end());
    CanvasRecord c;
    c.step        = 3;
    c.seq         = 0;
    c.prompt_len  = 3;
    c.tokens      = {7, 8, 9, 12, 99, 11, 13};
    c.unmask_step = {2, 0, 1, 3};
    c.scores      = {0.7f, 0.f, 0.6f, 0.8f};
    ev.push_back(c);
    const RunHistory h = fold(ev);
    CHECK(h.tokens(0)[3].unmask_step == 3);
    CHECK(h.tokens(0)[3].token == 13);
    CHECK(h.prompt_tokens(0) == std::vector<int32_t>{7, 8, 9});

    RunHistory h2 = fold(synthetic_run());
    RunBegin   rb;
    rb.method         = "original";
    rb.n_layer        = 1;
    rb.n_seq          = 1;
    rb.gen_length     = 8;
    rb.prompt_lengths = {2};
    h2.apply(rb);
    CHECK(h2.step_count() == 0);
    CHECK(!h2.finished());
    CHECK(h2.tokens(0).size() == 8);
}

// The same synthetic run under a RunBegin label.
std::vector<EventRecord> labelled_run(const std::string& label, const char* method = "dyllm") {
    auto ev                              = synthetic_run(method);
    std::get<RunBegin>(ev.front()).label = label;
    return ev;
}

TEST_CASE("run list: each RunBegin label finds its own request", "[app_model]") {
    RunList           list(3);
    const std::string l1 = list.expect({"", "prompt one", "42"});
    const std::string l2 = list.expect({"compare-a", "prompt two", ""});
    CHECK(l1 == "#1");
    CHECK(l2 == "#2 compare-a");
    // The request of #1 was refused by the engine (no RunBegin): #2's events must not take its prompt.
    for (const auto& e : labelled_run(l2, "original")) list.apply(e);
    REQUIRE(list.size() == 1);
    CHECK(list[0].label == l2);
    CHECK(list[0].serial == 2);
    CHECK(list[0].request.tag == "compare-a");
    CHECK(list[0].request.prompt == "prompt two");
    CHECK(list[0].history.info().method == "original");
    CHECK(list[0].history.finished());
    CHECK(list.find(l2) == &list[0]);
    CHECK(list.find(l1) == nullptr);

    // A run nobody asked for under that label (e.g. replayed from a file) gets an empty request.
    for (const auto& e : labelled_run("#1")) list.apply(e);  // #1 was retired when #2 began
    CHECK(list[1].serial == 0);
    CHECK(list[1].request.prompt.empty());

    // Memory stays bounded: the oldest runs go, and the caller learns how many.
    for (int i = 0; i < 3; ++i) {
        const std::string l = list.expect({"", "p" + std::to_string(i), ""});
        for (const auto& e : labelled_run(l)) list.apply(e);
    }
    CHECK(list.size() == 3);
    CHECK(list.dropped_runs() == 2);
    CHECK(list[0].request.prompt == "p0");
    CHECK(list[2].request.prompt == "p2");
    CHECK(list.newest() == &list[2]);
}

TEST_CASE("compare two runs: token diff and speed-up", "[app_model]") {
    const RunHistory a = fold(synthetic_run("original", 20.0, 13));
    const RunHistory b = fold(synthetic_run("dyllm", 10.0, 42));
    const RunCompare c = compare_runs(a, b);
    CHECK(c.positions == 4);
    CHECK(c.same == 3);
    CHECK(c.differ == 1);
    CHECK(c.differs[1] == 1);
    CHECK(c.speedup == Approx(2.0));
    CHECK(run_label(b) == "dyllm tau 0.99");
    CHECK(c.speedup_note.empty());
    CHECK(c.speedup_valid());

    std::vector<EventRecord> ablation = synthetic_run("dyllm");
    std::get<RunBegin>(ablation.front()).env.emplace_back("approx", "false");
    CHECK(run_label(fold(ablation)) == "dyllm tau 0.99 exact-attn");
}

TEST_CASE("CSV exports carry the histogram, timing and canvas tables", "[app_model]") {
    const RunHistory   h = fold(synthetic_run());
    std::ostringstream hist;
    write_histograms_csv(hist, h, 2);
    std::string        line;
    std::istringstream in(hist.str());
    std::getline(in, line);
    CHECK(line.rfind("step,layer,seq,n_rows,n_salient,tau,cos_", 0) == 0);
    int rows = 0;
    while (std::getline(in, line)) {
        ++rows;
        CHECK(line.rfind("2,", 0) == 0);
    }
    CHECK(rows == 2);  // two layers at step 2

    std::ostringstream t;
    write_step_timings_csv(t, h);
    CHECK(t.str().find("\n2,sparse-response,0.99") != std::string::npos);
    std::ostringstream ops;
    write_ops_csv(ops, h, 1);
    const std::string ops_text = ops.str();
    CHECK(std::count(ops_text.begin(), ops_text.end(), '\n') == 5);  // header + 4 ops
    std::ostringstream cv;
    write_canvas_csv(cv, h);
    CHECK(cv.str().find("\n2,11,1,0.6") != std::string::npos);
}

TEST_CASE("task examples load with the suite's reader; a bad file is skipped with file:line", "[app_model]") {
    const auto dir = std::filesystem::temp_directory_path() / "dyllm_test_app_model_tasks";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    {
        std::ofstream f(dir / "addition.jsonl");
        f << R"({"prompt":"12+30=?","answer":"42","task":"addition","shots":0})"
          << "\n";
        f << R"({"prompt":"1+1=?","answer":"2","task":"addition","shots":1})"
          << "\n";
        f << R"({"prompt":"2+2=?","answer":"4","task":"addition","shots":0})"
          << "\n";
        std::ofstream g(dir / "broken.jsonl");
        g << R"({"prompt":"x","answer":"y","task":"broken","shots":0})"
          << "\n";
        g << "not json\n";
    }
    const auto ex = load_task_examples(dir, 2);
    REQUIRE(ex.items.size() == 2);  // per_file caps addition at 2; broken.jsonl is skipped whole
    CHECK(ex.items[0].task == "addition");
    CHECK(ex.items[0].answer == "42");
    CHECK(ex.items[1].shots == 1);
    CHECK(ex.items[1].source == "addition.jsonl:2");
    REQUIRE(ex.warnings.size() == 1);
    CHECK(ex.warnings[0].find("broken.jsonl:2") != std::string::npos);
    std::filesystem::remove_all(dir);

    CHECK(app::answer_matches("  42 ", "42"));
    CHECK(app::answer_matches("7+8=15, 7+9+1=17, 4+2+1=7, answer 775", "7+8=15, 7+9+1=17, 4+2+1=7, answer 775"));
    CHECK(app::answer_matches("7+8=15, wrong steps, answer  775", "7+8=15, 7+9+1=17, 4+2+1=7, answer 775"));
    CHECK(!app::answer_matches("7+8=15, answer 776", "7+8=15, answer 775"));
    CHECK(!app::answer_matches("420", "42"));
    CHECK(!app::answer_matches("anything", ""));
    CHECK(load_task_examples("/nonexistent/dir").items.empty());
}

// Every panel non-empty, and their areas sum to the window's (with the edge checks below: a tiling).
static void check_tiles(const StudioLayout& L, double w, double h) {
    const Rect panels[] = {L.controls, L.prompt, L.canvas, L.summary, L.cosine, L.salient, L.lsal, L.time, L.scrubber};
    double     area     = 0;
    for (const auto& r : panels) {
        CHECK(r.w > 0);
        CHECK(r.h > 0);
        area += double(r.w) * r.h;
    }
    CHECK(area == Approx(w * h).epsilon(1e-4));
}

TEST_CASE("layout panels tile the window without overlap", "[app_model]") {
    const StudioLayout L = compute_layout(1600, 1000, false);
    check_tiles(L, 1600, 1000);
    CHECK(L.canvas.x == Approx(L.prompt.right()));
    CHECK(L.summary.right() == Approx(1600));
    CHECK(L.scrubber.bottom() == Approx(1000));
    const StudioLayout M = compute_layout(1600, 1000, true);
    CHECK(M.prompt.y == Approx(L.prompt.y + kMessageBarHeight));
    // At 1280x720 the bottom band keeps its minimum height (usable without dragging the splitter), at any fraction.
    const StudioLayout S = compute_layout(1280, 720, false, kBottomMin);
    CHECK(S.time.h == Approx(kBottomMinPx));
    CHECK(S.scrubber.bottom() == Approx(720));
    CHECK(S.canvas.h == Approx(S.cosine.h));
    CHECK(compute_layout(1280, 720, false, kBottomMax).time.h > kBottomMinPx);  // dragging up still works
}

TEST_CASE("layout puts the salient map beside the L_sal panel in a short band, above it in a tall one", "[app_model]") {
    // 1600x1000: the middle band is tall enough to stack them (the map above, full width of the right column).
    const StudioLayout L = compute_layout(1600, 1000, false);
    REQUIRE(L.cosine.h >= kSaliencyStackMinPx);
    CHECK(L.salient.x == Approx(L.cosine.right()));
    CHECK(L.lsal.x == Approx(L.salient.x));
    CHECK(L.salient.w == Approx(L.lsal.w));
    CHECK(L.lsal.y == Approx(L.salient.bottom()));
    CHECK(L.lsal.bottom() == Approx(L.cosine.bottom()));
    // 1280x720: a short band (an 8-layer model's map got 5 px per row stacked): side by side, each the band's height,
    // the map the wider one, together the right column.
    const StudioLayout S = compute_layout(1280, 720, false);
    check_tiles(S, 1280, 720);
    REQUIRE(S.cosine.h < kSaliencyStackMinPx);
    CHECK(S.salient.y == Approx(S.cosine.y));
    CHECK(S.lsal.y == Approx(S.cosine.y));
    CHECK(S.salient.h == Approx(S.cosine.h));
    CHECK(S.lsal.h == Approx(S.cosine.h));
    CHECK(S.salient.x == Approx(S.cosine.right()));
    CHECK(S.lsal.x == Approx(S.salient.right()));
    CHECK(S.lsal.right() == Approx(1280));
    CHECK(S.salient.w > S.lsal.w);
    // Dragging the bottom splitter down makes the band tall enough to stack again.
    const StudioLayout D = compute_layout(1280, 1200, false, kBottomMin);
    CHECK(D.cosine.h >= kSaliencyStackMinPx);
    CHECK(D.lsal.y == Approx(D.salient.bottom()));
}

TEST_CASE("colormap endpoints and token display", "[app_model]") {
    // matplotlib viridis: t=0 -> (0.267, 0.005, 0.329), t=1 -> (0.993, 0.906, 0.144); the fit is within ~0.02.
    const Rgb a = viridis(0.f), b = viridis(1.f);
    CHECK(a[0] == Approx(0.267).margin(0.02));
    CHECK(a[2] == Approx(0.329).margin(0.02));
    CHECK(b[0] == Approx(0.993).margin(0.02));
    CHECK(b[1] == Approx(0.906).margin(0.02));
    CHECK(pack_rgba({1.f, 0.f, 0.f}, 1.f) == 0xFF0000FFu);
    CHECK(visible_token_text("a\nb") == "a\\nb");
    CHECK(visible_token_text("  ") == "\xC2\xB7\xC2\xB7");
    CHECK(visible_token_text("\xE2\x82") == "\\xe2\\x82");      // truncated 3-byte character
    CHECK(visible_token_text("caf\xC3\xA9") == "caf\xC3\xA9");  // valid UTF-8 kept
    CHECK(visible_token_text("\x01") == "\\x01");
    Vocab v;
    CHECK(v.display(5) == "#5");
}

TEST_CASE("utf8_sequence_length: whole valid sequences only", "[app][text]") {
    const std::string s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";  // a, e-acute, euro sign, an emoji
    CHECK(utf8_sequence_length(s, 0) == 0);                         // ASCII is not a multi-byte sequence
    CHECK(utf8_sequence_length(s, 1) == 2);
    CHECK(utf8_sequence_length(s, 2) == 0);  // a continuation byte alone
    CHECK(utf8_sequence_length(s, 3) == 3);
    CHECK(utf8_sequence_length(s, 6) == 4);
    CHECK(utf8_sequence_length("\xE2\x82", 0) == 0);          // cut by the end of the string
    CHECK(utf8_sequence_length("\xE2\x41\x41", 0) == 0);      // a continuation byte missing
    CHECK(utf8_sequence_length("\xC0\xAF", 0) == 0);          // overlong lead byte
    CHECK(utf8_sequence_length("\xF5\x80\x80\x80", 0) == 0);  // beyond U+10FFFF
}

namespace {

// Applies a labelled synthetic run to the list, optionally cut after `steps` steps (with a cancelled RunEnd) or left
// running (no RunEnd).
enum class Ending { Normal, Cancelled, Running };
void add_run(RunList& list, const std::string& label, const char* method = "dyllm", Ending end = Ending::Normal,
             int steps = 4) {
    for (const auto& e : labelled_run(label, method)) {
        if (const auto* sb = std::get_if<StepBegin>(&e); sb && sb->step > steps) continue;
        if (const auto* se = std::get_if<StepEnd>(&e); se && se->step > steps) continue;
        if (const auto* u = std::get_if<UnmaskRecord>(&e); u && u->step > steps) continue;
        if (const auto* o = std::get_if<OpTiming>(&e); o && o->step > steps) continue;
        if (const auto* l = std::get_if<LayerSaliencyRecord>(&e); l && l->step > steps) continue;
        if (std::holds_alternative<RunEnd>(e)) {
            if (end == Ending::Running) continue;
            RunEnd re    = std::get<RunEnd>(e);
            re.cancelled = end == Ending::Cancelled;
            re.steps     = steps;
            list.apply(re);
            continue;
        }
        list.apply(e);
    }
}

}  // namespace

TEST_CASE("compare pick: a started comparison is shown as its runs arrive, never older runs meanwhile", "[app_model]") {
    RunList     list;
    ComparePick pick;
    add_run(list, list.expect({"", "old one", ""}));
    add_run(list, list.expect({"", "old two", ""}));
    // Nothing chosen: the last two runs.
    ComparePair p = resolve_compare(list, pick);
    CHECK(p.a == 0);
    CHECK(p.b == 1);
    CHECK(!p.waiting);

    // "Run original vs current settings": before run A begins, nothing is shown (not the last two runs, kept).
    const std::string la = list.expect({"compare-a", "new", ""});
    pick.start_pair(la);
    p = resolve_compare(list, pick);
    CHECK(p.a == -1);
    CHECK(p.b == -1);
    CHECK(p.waiting);
    add_run(list, la, "original");
    p = resolve_compare(list, pick);
    CHECK(p.a == 2);
    CHECK(p.b == -1);
    CHECK(p.waiting);
    const std::string lb = list.expect({"compare-b", "new", ""});
    pick.pair_b_started(lb);
    CHECK(resolve_compare(list, pick).b == -1);  // labelled but not begun yet
    add_run(list, lb, "dyllm");
    p = resolve_compare(list, pick);
    CHECK(p.a == 2);
    CHECK(p.b == 3);
    CHECK(!p.waiting);

    // A later plain run does not move the selection.
    add_run(list, list.expect({"", "later", ""}));
    p = resolve_compare(list, pick);
    CHECK(p.a == 2);
    CHECK(p.b == 3);

    // A pair chosen by hand sticks; a later comparison's B does not overwrite it.
    pick.choose(list[0].label, list[4].label);
    pick.pair_b_started("#99 compare-b");
    p = resolve_compare(list, pick);
    CHECK(p.a == 0);
    CHECK(p.b == 4);

    // A chosen run dropped from the bounded list: back to the newest compare pair, not an out-of-range index.
    RunList           small(2);
    ComparePick       pk;
    const std::string s1 = small.expect({"", "x", ""});
    add_run(small, s1);
    const std::string s2 = small.expect({"", "y", ""});
    add_run(small, s2);
    pk.choose(s1, s2);
    add_run(small, small.expect({"", "z", ""}));  // drops s1
    p = resolve_compare(small, pk);
    CHECK(p.a == 0);
    CHECK(p.b == 1);

    // A started comparison that never runs (A refused) goes back to the default.
    pick.start_pair("#100 compare-a");
    CHECK(resolve_compare(list, pick).waiting);
    pick.drop_pair();
    p = resolve_compare(list, pick);
    CHECK(p.a == 2);  // the newest compare-a/compare-b pair
    CHECK(p.b == 3);
}

TEST_CASE("run labels carry the taus the steps used; aborted runs are marked and get no speed-up", "[app_model]") {
    // Live tau changes: steps 1-2 at 0.95, steps 3-4 at 0.9999 (StepBegin.tau is what each step used).
    std::vector<EventRecord> ev        = synthetic_run("dyllm");
    std::get<RunBegin>(ev.front()).env = {{"tau", "0.950000"}};
    for (auto& e : ev)
        if (auto* sb = std::get_if<StepBegin>(&e)) sb->tau = sb->step <= 2 ? 0.95f : 0.9999f;
    const RunHistory changed = fold(ev);
    CHECK(run_taus(changed) == std::vector<float>{0.95f, 0.9999f});
    CHECK(run_label(changed) == "dyllm tau 0.95->0.9999");

    // Three values are listed; more collapse to first->...->last.
    for (auto& e : ev)
        if (auto* sb = std::get_if<StepBegin>(&e))
            sb->tau = std::array{0.91f, 0.92f, 0.93f, 0.94f}[size_t(sb->step - 1)];
    CHECK(run_label(fold(ev)) == "dyllm tau 0.91->...->0.94");
    for (auto& e : ev)
        if (auto* sb = std::get_if<StepBegin>(&e)) sb->tau = sb->step == 1 ? 0.95f : sb->step == 2 ? 0.97f : 0.99f;
    CHECK(run_label(fold(ev)) == "dyllm tau 0.95->0.97->0.99");

    // Before its first step a run shows RunBegin's tau.
    RunHistory fresh;
    fresh.apply(ev.front());
    CHECK(run_label(fresh) == "dyllm tau 0.95");
    CHECK(run_state_note(fresh) == "running");

    // A 2-step run cancelled (replaced by a restart) next to a complete original run.
    RunList list;
    add_run(list, list.expect({"", "p", ""}), "original");
    add_run(list, list.expect({"", "p", ""}), "dyllm", Ending::Cancelled, 2);
    add_run(list, list.expect({"", "p", ""}), "dyllm", Ending::Running, 3);
    CHECK(run_state_note(list[0].history).empty());
    CHECK(run_state_note(list[1].history) == "aborted at step 2");
    CHECK(run_state_note(list[2].history) == "running");
    const RunCompare aborted = compare_runs(list[0].history, list[1].history);
    CHECK(aborted.speedup_note == "run B aborted at step 2");
    CHECK(!aborted.speedup_valid());
    CHECK(compare_runs(list[1].history, list[0].history).speedup_note == "run A aborted at step 2");
    CHECK(compare_runs(list[0].history, list[2].history).speedup_note == "run B running");
    CHECK(!compare_runs(list[0].history, list[2].history).speedup_valid());
}

TEST_CASE("timed notice: set and cleared on one clock, gone after its time", "[app_model]") {
    TimedNotice n;
    CHECK(!n.visible());
    n.show("wrote 7 files to /tmp/x", 1000.0);
    n.expire(1000.0 + 1.0 / 60);  // the next frame: it stayed (it vanished here when set from ImGui::GetTime())
    CHECK(n.visible());
    CHECK(n.text() == "wrote 7 files to /tmp/x");
    n.expire(1000.0 + TimedNotice::kDefaultSeconds - 0.01);
    CHECK(n.visible());
    n.expire(1000.0 + TimedNotice::kDefaultSeconds + 0.01);
    CHECK(!n.visible());
    n.show("short", 5.0, 1.0);
    n.expire(5.5);
    CHECK(n.visible());
    n.expire(6.5);
    CHECK(n.text().empty());
}

TEST_CASE("canvas chips: end of text collapses to one chip; a stop at EOS is found", "[app_model]") {
    constexpr int32_t kEos = 99;
    auto              cell = [](int32_t tok, int32_t step) {
        CanvasCell c;
        c.token       = tok;
        c.unmask_step = step;
        return c;
    };
    const CanvasCell mask{};
    // answer 5 7, then EOS EOS, a mask, then EOS x 3
    std::vector<CanvasCell> cells = {cell(5, 1), cell(7, 2),    cell(kEos, 1), cell(kEos, 1),
                                     mask,       cell(kEos, 1), cell(kEos, 1), cell(kEos, 1)};
    auto                    chips = canvas_chips(cells, kEos);
    REQUIRE(chips.size() == 5);
    CHECK(!chips[0].end_run);
    CHECK(chips[2].end_run);
    CHECK(chips[2].first == 2);
    CHECK(chips[2].count == 2);
    CHECK(!chips[3].end_run);  // the mask
    CHECK(chips[4].first == 5);
    CHECK(chips[4].n_eos == 3);
    CHECK(end_chip_text(chips[4]) == "<eos> x 3");
    // Every position is in exactly one chip, in order.
    int32_t next = 0;
    for (const auto& c : chips) {
        CHECK(c.first == next);
        next += c.count;
    }
    CHECK(next == int32_t(cells.size()));
    // A lone EOS stays an ordinary cell; no eos id: nothing collapses.
    CHECK(canvas_chips({cell(5, 1), cell(kEos, 1)}, kEos).size() == 2);
    CHECK(canvas_chips(cells, -1).size() == cells.size());
    // Stopped at the EOS at position 2: everything after is one chip, masks counted as never decoded.
    chips = canvas_chips(cells, kEos, 2);
    REQUIRE(chips.size() == 3);
    CHECK(chips[2].first == 2);
    CHECK(chips[2].count == 6);
    CHECK(chips[2].n_eos == 5);
    CHECK(chips[2].n_masked == 1);
    CHECK(end_chip_text(chips[2]) == "<eos> x 5, 1 never decoded");

    // eos_stop on a run of 4 positions: step 1 unmasks an EOS at 1 (a mask before it: no stop), step 2 the answer at
    // 0 (prefix complete, but the sampler only tests new EOS), step 3 an EOS at 2 with no mask before it: the sequence
    // stops at step 3 with position 3 still masked.
    std::vector<EventRecord> ev;
    RunBegin                 rb;
    rb.method         = "dyllm";
    rb.n_layer        = 1;
    rb.n_seq          = 1;
    rb.gen_length     = 4;
    rb.steps          = 4;
    rb.prompt_lengths = {2};
    ev.push_back(rb);
    for (int k = 1; k <= 3; ++k) {
        StepBegin sb;
        sb.step = k;
        sb.tau  = 0.99f;
        ev.push_back(sb);
        UnmaskRecord u;
        u.step      = k;
        u.positions = {k == 1 ? 1 : k == 2 ? 0 : 2};
        u.tokens    = {k == 2 ? 5 : kEos};
        u.scores    = {0.9f};
        ev.push_back(u);
        StepEnd se;
        se.step    = k;
        se.wall_ns = 1000;
        ev.push_back(se);
    }
    RunEnd re;
    re.steps = 3;
    ev.push_back(re);
    const EosStop st = eos_stop(fold(ev), 0, kEos);
    CHECK(st.step == 3);      // the last step, not step 2 where the prefix up to the first EOS was complete
    CHECK(st.position == 1);  // the text ends at the first EOS; position 3 was never decoded
    CHECK(eos_stop(fold(ev), 0, 7).step == 0);  // another eos id: no stop
    std::get<RunEnd>(ev.back()).cancelled = true;
    CHECK(eos_stop(fold(ev), 0, kEos).step == 0);  // cancelled: masks left for another reason
    std::get<RunEnd>(ev.back()).cancelled = false;
    std::get<RunBegin>(ev.front()).env    = {{"ignore_eos", "true"}};
    CHECK(eos_stop(fold(ev), 0, kEos).step == 0);
    ev.pop_back();  // still running: not stopped
    std::get<RunBegin>(ev.front()).env.clear();
    CHECK(eos_stop(fold(ev), 0, kEos).step == 0);
}

TEST_CASE("axis ticks: 1-2-5 steps and decades", "[app_model]") {
    CHECK(linear_ticks(10.0, 5) == std::vector<double>{0, 2, 4, 6, 8, 10});
    CHECK(linear_ticks(0.7, 3) == std::vector<double>{0, 0.5});
    CHECK(linear_ticks(950.0, 4) == std::vector<double>{0, 500});  // 237.5 per tick rounds up to 500
    CHECK(linear_ticks(0.0, 4) == std::vector<double>{0});
    CHECK(linear_ticks(3.0, 3) == std::vector<double>{0, 1, 2, 3});
    CHECK(decade_ticks(0.004, 2.5) == std::vector<double>{0.01, 0.1, 1});
    CHECK(decade_ticks(0.002, 0.005) == std::vector<double>{0.001});  // no decade inside: the one below
    CHECK(decade_ticks(0, 1).empty());
    CHECK(tick_label(0.30000000000000004) == "0.3");
    CHECK(tick_label(500) == "500");
    CHECK(tick_label(0.001) == "0.001");
}

TEST_CASE("frame throttle: full rate while working and after input, waits when idle", "[app_model]") {
    FrameThrottle t;
    CHECK(t.wait_before_frame(true) == 0);
    for (int i = 0; i < FrameThrottle::kActiveFrames; ++i) CHECK(t.wait_before_frame(false) == 0);
    const double w = t.wait_before_frame(false);
    CHECK(w == FrameThrottle::kIdleWaitS);
    t.woke(w, w);  // timed out: still idle
    CHECK(t.wait_before_frame(false) == FrameThrottle::kIdleWaitS);
    t.woke(0.01, w);  // input arrived: a few frames at full rate
    for (int i = 0; i < FrameThrottle::kActiveFrames; ++i) CHECK(t.wait_before_frame(false) == 0);
    CHECK(t.wait_before_frame(false) > 0);
    CHECK(t.wait_before_frame(true) == 0);  // work resumes at once
}

TEST_CASE("compare in lock step: each run at min(k, its last step); the diff follows the step", "[app_model]") {
    const RunHistory a = fold(synthetic_run("original", 20.0, 13));
    const RunHistory b = fold(synthetic_run("dyllm", 10.0, 42));
    // An aborted run of 2 steps: its events up to the second StepEnd, then a cancelled RunEnd.
    std::vector<EventRecord> ev = synthetic_run("dyllm");
    std::vector<EventRecord> cut;
    int                      ends = 0;
    for (const auto& e : ev) {
        if (ends == 2) break;
        cut.push_back(e);
        if (std::holds_alternative<StepEnd>(e)) ++ends;
    }
    RunEnd re;
    re.steps     = 2;
    re.cancelled = true;
    cut.push_back(re);
    const RunHistory aborted = fold(cut);

    LockStep ls = lockstep(a, aborted, 3);
    CHECK(ls.last == 4);
    CHECK(ls.a == 3);
    CHECK(ls.b == 2);  // stays on its last canvas
    ls = lockstep(a, aborted, 99);
    CHECK((ls.a == 4 && ls.b == 2));
    ls = lockstep(a, aborted, -5);
    CHECK((ls.a == 0 && ls.b == 0));

    // Unmask order 2, 0, 3, 1; the runs differ only in the last token (position 1 at step 4).
    RunCompare c = compare_runs(a, b, 0, 3);
    CHECK(c.same == 3);
    CHECK(c.masked == 1);
    CHECK(c.differ == 0);
    c = compare_runs(a, b, 0, 1);
    CHECK((c.same == 1 && c.masked == 3));
    c = compare_runs(a, b, 0, 4);
    CHECK((c.differ == 1 && c.differs[1] == 1));
    CHECK(compare_runs(a, b).differ == 1);  // no step: the last canvases
}

TEST_CASE("op class diff: totals, per-step spread and ratio B/A", "[app_model]") {
    // Spread: linear interpolation between order statistics (numpy's default), whatever the input order.
    const Spread sp = spread_of({11, 1, 10, 2, 9, 3, 8, 4, 7, 5, 6});
    CHECK(sp.n == 11);
    CHECK(sp.p10 == Approx(2.0));
    CHECK(sp.median == Approx(6.0));
    CHECK(sp.p90 == Approx(10.0));
    CHECK(spread_of({4.0}).median == Approx(4.0));
    CHECK(spread_of({}).n == 0);

    // B's FFN takes half of A's at every step but one, which a preemption made 40x slower: the total ratio moves,
    // the median ratio stays at 0.5 and p90 shows the outlier.
    std::vector<EventRecord> eb = synthetic_run("dyllm");
    for (auto& e : eb)
        if (auto* o = std::get_if<OpTiming>(&e); o && o->op == OpClass::Ffn)
            o->dur_ns = o->step == 3 && o->layer == 0 ? 60'000'000 : 1'500'000;
    const RunHistory a = fold(synthetic_run("original"));
    const RunHistory b = fold(eb);
    const auto       d = op_class_diff(a, b);
    REQUIRE(d.size() == 3);  // ffn, attn_exact, all ops
    CHECK(d[0].op == OpClass::AttnExact);
    CHECK(d[0].ratio == Approx(1.0));
    CHECK(d[1].op == OpClass::Ffn);
    CHECK(d[1].total_a == Approx(4 * 6e-3));  // 2 layers x 3 ms x 4 steps
    CHECK(d[1].total_b == Approx(3 * 3e-3 + 61.5e-3));
    CHECK(d[1].a.median == Approx(6e-3));
    CHECK(d[1].b.median == Approx(3e-3));
    CHECK(d[1].median_ratio == Approx(0.5));
    CHECK(d[1].b.p90 > 30e-3);
    CHECK(d[2].op == OpClass::Count);
    CHECK(d[2].total_a == Approx(4 * 8e-3));
}

TEST_CASE("decoded text so far: masks as boxes, long mask runs counted, end of text and specials left out",
          "[app_model]") {
    Vocab v;
    v.has_tokenizer        = true;
    v.text                 = {"<eos>", "Hello", " world", "\xE2\x82", "\xAC", "!\n", "<|im_end|>", "a\tb"};
    v.special              = {1, 0, 0, 0, 0, 0, 1, 0};
    v.eos_id               = 0;
    auto              cell = [](int32_t tok) { return CanvasCell{tok, tok < 0 ? 0 : 1, 0.5f}; };
    const std::string box  = "\xE2\x96\xA1";
    CHECK(decoded_so_far({cell(1), cell(-1), cell(2)}, v) == "Hello" + box + " world");
    // A two-piece euro sign rejoins across tokens; split by a mask each piece is U+FFFD.
    CHECK(decoded_so_far({cell(3), cell(4)}, v) == "\xE2\x82\xAC");
    CHECK(decoded_so_far({cell(3), cell(-1), cell(4)}, v) == "\xEF\xBF\xBD\xEF\xBF\xBD" + box + "\xEF\xBF\xBD");
    CHECK(decoded_so_far({cell(5), cell(6), cell(0), cell(7)}, v) == "!\na b");
    std::vector<CanvasCell> many(10, cell(-1));
    many[0] = cell(1);
    CHECK(decoded_so_far(many, v) == "Hello" + box +
                                         "\xC3\x97"
                                         "9");
    // Stopped at end of text at position 2: the masks after it are not text.
    CHECK(decoded_so_far({cell(1), cell(2), cell(0), cell(-1), cell(-1)}, v, 2) == "Hello world");
    Vocab ids;  // weight-only checkpoint: ids
    CHECK(decoded_so_far({cell(5), cell(7)}, ids) == "#5 #7");
}

TEST_CASE("salient layers per response position at a step", "[app_model]") {
    const RunHistory h = fold(synthetic_run());
    // Step 2 tests the 4 response rows (sequence positions 3..6): response position 2 (order[0]) is salient in both
    // layers, position 3 (sequence 6) in layer 1 only.
    const auto n = h.salient_layers(0, 2);
    REQUIRE(n.size() == 4);
    CHECK(n == std::vector<int32_t>{0, 0, 2, 1});
    CHECK(h.salient_layers(0, 1) == std::vector<int32_t>{0, 0, 0, 0});  // FULL step: no cosine test
    CHECK(h.salient_layers(0, 99) == std::vector<int32_t>{0, 0, 0, 0});
}

TEST_CASE("the studio's engine leaves one core to the UI unless a thread count is asked for", "[app_model]") {
    CHECK(studio_engine_threads(0, 2) == 1);
    CHECK(studio_engine_threads(0, 16) == 15);
    CHECK(studio_engine_threads(0, 1) == 1);  // never fewer than one
    CHECK(studio_engine_threads(0, 0) == 1);  // hardware_concurrency() unknown
    CHECK(studio_engine_threads(2, 2) == 2);  // -t 2: what the user asked for
    CHECK(studio_engine_threads(3, 16) == 3);
}
