// The task-suite tau sweep without a window: the Pareto front on hand-made points (ties, duplicates, dominated and
// invalid points), the method and tau lists, the runs a sweep makes, one point equal to `dyllm eval`'s score of the
// same run, the background job (points, cancel, no model) and the studio driving it through its engine worker.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "app/model/pareto_front.h"
#include "app/model/suite_sweep.h"
#include "app/model/suite_sweep_job.h"
#include "app/model/task_eval.h"
#include "app/studio/studio.h"
#include "engine/errors.h"
#include "tests/support/tiny_models.h"

namespace fs = std::filesystem;
using namespace dyllm;
using namespace dyllm::app;

namespace {

// Four short items per task (byte-level tokens: a few dozen per prompt) in the shipped files' format.
fs::path write_tasks(const fs::path& dir) {
    fs::create_directories(dir);
    std::ofstream add(dir / "add.jsonl");
    for (int i = 0; i < 4; ++i)
        add << R"({"prompt": "Q: add )" << i << "+" << i + 1 << R"(", "answer": "answer )" << 2 * i + 1
            << R"(", "task": "add", "shots": 0})"
            << "\n";
    std::ofstream rev(dir / "rev.jsonl");
    for (const char* w : {"ab", "cd", "ef", "gh"})
        rev << R"({"prompt": "Q: rev )" << w << R"(", "answer": ")" << w[1] << w[0]
            << R"(", "task": "rev", "shots": 0})"
            << "\n";
    return dir;
}

// A tiny LLaDA checkpoint with its own tasks/ (find_tasks_dir looks there first), written once per process.
const fs::path& tiny_with_tasks() {
    static const fs::path dir = [] {
        const fs::path d = test::make_tiny_checkpoint(Family::LLaDA);
        write_tasks(d / "tasks");
        return d;
    }();
    return dir;
}

// Short runs: 8 tokens in 8 steps, so a point of 2 items is a few milliseconds.
DiffusionParams tiny_params() {
    DiffusionParams p;
    p.gen_length   = 8;
    p.steps        = 8;
    p.block_length = 8;
    p.full_steps   = 2;
    return p;
}

std::vector<bool> front_of(const std::vector<ParetoInput>& in) {
    return pareto_front(in);
}

}  // namespace

TEST_CASE(
    "pareto front: dominated points drop out, ties and duplicates stay, invalid points neither count nor dominate",
    "[suite_sweep]") {
    // x = tokens/s, y = accuracy, both higher is better.
    const std::vector<ParetoInput> pts = {
        {100, 0.9},          // 0: front (most accurate)
        {200, 0.8},          // 1: front
        {150, 0.8},          // 2: dominated by 1 (same accuracy, slower)
        {200, 0.7},          // 3: dominated by 1 (same speed, less accurate)
        {300, 0.5},          // 4: front (fastest)
        {300, 0.5},          // 5: duplicate of 4: equal points do not dominate each other
        {50, 0.6},           // 6: dominated by everything on the front
        {1000, 1.0, false},  // 7: invalid (cancelled): not on the front and dominates nothing
        {NAN, 0.95},         // 8: NaN coordinate: treated as invalid
    };
    const std::vector<bool> f    = front_of(pts);
    const std::vector<bool> want = {true, true, false, false, true, true, false, false, false};
    CHECK(f == want);
    // Drawing order of the front: by x, then y.
    CHECK(pareto_order(pts, f) == std::vector<size_t>{0, 1, 4, 5});
    // Degenerate sets.
    CHECK(front_of({}).empty());
    CHECK(front_of({{1, 1}}) == std::vector<bool>{true});
    CHECK(front_of({{1, 1, false}}) == std::vector<bool>{false});
    // A single point better on both axes leaves only itself.
    CHECK(front_of({{1, 0.1}, {2, 0.2}, {3, 0.3}}) == std::vector<bool>{false, false, true});
}

TEST_CASE("suite sweep: mark_pareto uses tokens/s and accuracy of the finished points", "[suite_sweep]") {
    std::vector<SuitePoint> pts(4);
    // original-like: slow, accurate
    pts[0].items        = 10;
    pts[0].accuracy     = 0.9;
    pts[0].tokens_per_s = 100;
    // as accurate, faster: dominates 0
    pts[1].items        = 10;
    pts[1].accuracy     = 0.9;
    pts[1].tokens_per_s = 500;
    // fastest: front
    pts[2].items        = 10;
    pts[2].accuracy     = 0.5;
    pts[2].tokens_per_s = 700;
    // would dominate all, but cancelled
    pts[3].items        = 10;
    pts[3].accuracy     = 1.0;
    pts[3].tokens_per_s = 900;
    pts[3].cancelled    = true;
    mark_pareto(pts);
    CHECK(!pts[0].pareto);
    CHECK(pts[1].pareto);
    CHECK(pts[2].pareto);
    CHECK(!pts[3].pareto);
}

TEST_CASE("suite sweep: tau and method lists refuse bad items with one message naming the flag", "[suite_sweep]") {
    CHECK(parse_sweep_taus("--tau", "0.9, 0.99,0.999") == std::vector<float>{0.9f, 0.99f, 0.999f});
    auto message = [](const std::function<void()>& f) {
        try {
            f();
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    CHECK(message([] { parse_sweep_taus("--tau", ""); }) == "--tau: empty list (expected e.g. 0.95,0.99)");
    CHECK(message([] { parse_sweep_taus("--tau", "0.9,"); }).find("--tau: empty item") == 0);
    CHECK(message([] { parse_sweep_taus("--tau", "1"); }).find("--tau: tau 1 is outside (0, 1)") == 0);
    CHECK(message([] { parse_sweep_taus("--tau", "0"); }).find("--tau: tau 0 is outside (0, 1)") == 0);
    CHECK(message([] { parse_sweep_taus("--tau", "-0.5"); }).find("is outside (0, 1)") != std::string::npos);
    CHECK(message([] { parse_sweep_taus("--tau", "0.9x"); }) == "--tau: '0.9x' is not a number");
    CHECK(message([] { parse_sweep_taus("--tau", "nan"); }) == "--tau: 'nan' is not a number");
    CHECK(message([] { parse_sweep_taus("--tau", "0.9,0.9"); }) == "--tau: tau 0.9 is given twice");

    const auto ms = parse_sweep_methods("--methods", "dyllm,dyllm:incremental,fast-dual");
    REQUIRE(ms.size() == 3);
    CHECK(ms[0].method == Method::DyLLM);
    CHECK(ms[0].stable_rows.empty());
    CHECK(ms[1].stable_rows == "incremental");
    CHECK(ms[2].method == Method::FastDual);
    CHECK(message([] { parse_sweep_methods("--methods", "warp"); }).find("--methods: unknown method 'warp'") == 0);
    // all: every registered method at its defaults, in registry order.
    const auto every = parse_sweep_methods("--methods", "all");
    REQUIRE(every.size() == all_methods().size());
    for (size_t i = 0; i < every.size(); ++i) {
        CHECK(every[i].method == all_methods()[i]);
        CHECK(every[i].stable_rows.empty());
    }
    CHECK(message([] {
              parse_sweep_methods("--methods", "dyllm:fast");
          }).find("--methods: unknown stable-row update 'fast'") == 0);
    CHECK(message([] { parse_sweep_methods("--methods", "original:exact"); }).find("only dyllm takes") !=
          std::string::npos);
    CHECK(message([] { parse_sweep_methods("--methods", ""); }).find("--methods: empty list") == 0);
}

TEST_CASE("suite sweep: references first, dyllm once per tau, a repeated method once", "[suite_sweep]") {
    DiffusionParams base    = tiny_params();
    base.approx_incremental = true;  // the base's stable-row update ("dyllm" without a suffix keeps it)

    const std::vector<SweepMethod> methods = {{Method::DyLLM, ""}, {Method::DyLLM, "exact"}, {Method::DyLLM, ""}};
    const auto                     runs    = suite_runs(base, Family::LLaDA, methods, {0.9f, 0.99f}, true);
    REQUIRE(runs.size() == 2 + 2 + 2);
    CHECK(runs[0].method == Method::Original);
    CHECK(runs[0].reference);
    CHECK(std::isnan(runs[0].tau));
    CHECK(runs[0].label() == "original");
    CHECK(runs[1].method == Method::FastDual);
    CHECK(runs[1].reference);
    CHECK(runs[2].label() == "dyllm incremental 0.9");
    CHECK(runs[2].params.tau == 0.9f);
    CHECK(runs[2].params.approx_incremental);
    CHECK(!runs[2].reference);
    CHECK(runs[3].tau == 0.99f);
    CHECK(runs[4].stable_rows == "exact");
    CHECK(!runs[4].params.approx);
    CHECK(runs[5].label() == "dyllm exact 0.99");
    for (const auto& r : runs) CHECK(r.params.method == r.method);

    // No tau list: the family default; methods named by the user only (no references), original listed twice once.
    const auto only = suite_runs(tiny_params(), Family::Dream,
                                 {{Method::Original, ""}, {Method::DyLLM, ""}, {Method::Original, ""}}, {}, false);
    REQUIRE(only.size() == 2);
    CHECK(only[0].method == Method::Original);
    CHECK(only[1].tau == Approx(0.995));  // Dream's default (engine/params.cpp)
    CHECK(only[1].label() == "dyllm 0.995");
}

TEST_CASE("suite sweep: a point is dyllm eval's score of the same run, summed over the tasks", "[suite_sweep]") {
    auto       model  = Model::load(tiny_with_tasks().string(), BackendKind::Cpu, 1);
    const auto suites = load_tasks(find_tasks_dir(model->dir()), "all");
    REQUIRE(suites.size() == 2);
    const auto runs = suite_runs(tiny_params(), model->config().family, {{Method::DyLLM, ""}}, {0.9f}, true);
    REQUIRE(runs.size() == 3);
    SuiteOptions o;
    o.limit = 2;
    o.batch = 2;
    for (const auto& r : runs) {
        INFO(r.label());
        const SuitePoint p = run_suite_point(*model, suites, r, o);
        int              n = 0, correct = 0;
        double           flops = 0, dense = 0;
        for (const auto& s : suites) {
            const TaskScore t = eval_task(*model, s, r.params, {2, -1, 2, false});
            n += t.n;
            correct += t.correct;
            flops += t.flops;
            dense += t.dense_flops;
        }
        CHECK(p.items == 4);  // 2 items x 2 tasks
        CHECK(p.items == n);
        CHECK(p.correct == correct);
        CHECK(p.accuracy >= 0.0);
        CHECK(p.accuracy <= 1.0);
        CHECK(p.generated_tokens == 4 * 8);
        CHECK(p.tokens_per_s == Approx(double(p.generated_tokens) / p.denoise_s));
        // FLOPs are the engine's accounting, deterministic for a greedy run: equal to eval's up to summation order.
        CHECK(p.flops_per_token == Approx(flops / 32.0).epsilon(1e-9));
        CHECK(p.flops_vs_dense == Approx(flops / dense).epsilon(1e-9));
        if (r.method == Method::Original)
            CHECK(p.flops_vs_dense == Approx(1.0));
        else
            CHECK(p.flops_vs_dense < 1.0);
        CHECK(!p.cancelled);
    }

    // A cancel flag already set stops the point after its first step, marked cancelled.
    std::atomic<bool> stop{true};
    o.cancel           = &stop;
    const SuitePoint c = run_suite_point(*model, suites, runs[0], o);
    CHECK(c.cancelled);

    // The CSV: one header row, one row per point, the documented columns.
    std::vector<SuitePoint> pts(2);
    pts[0].run       = runs[0];
    pts[1].run       = runs[2];
    const CsvTable t = suite_csv(pts, {"add", "tiny", "cpu", -1, 16});
    CHECK(t.header == std::vector<std::string>{
                          "method",    "stable_rows", "tau",        "reference",    "pareto",          "task",
                          "items",     "correct",     "accuracy",   "tokens_per_s", "flops_per_token", "flops_vs_dense",
                          "denoise_s", "nfe",         "gen_length", "steps",        "block_length",    "batch",
                          "shots",     "model",       "backend"});
    REQUIRE(t.rows.size() == 2);
    CHECK(t.rows[0][2] == "");  // original has no tau
    CHECK(t.rows[1][2] == "0.9");
    CHECK(t.rows[1][0] == "dyllm");
}

TEST_CASE("suite sweep job: every run becomes a point; cancel and a missing model end it cleanly", "[suite_sweep]") {
    auto              model = Model::load(tiny_with_tasks().string(), BackendKind::Cpu, 1);
    SuiteSweepRequest q;
    q.task          = "add";
    q.base          = tiny_params();
    q.methods       = {{Method::DyLLM, ""}};
    q.taus          = {0.9f, 0.99f};
    q.options.limit = 2;
    {
        SuiteSweepJob job(q);
        CHECK(!job.state().started);
        job.run(model.get());
        const SuiteSweepState st = job.state();
        CHECK(st.finished);
        CHECK(st.error.empty());
        CHECK(!st.cancelled);
        CHECK(st.runs == 4);
        CHECK(st.done == 4);
        REQUIRE(st.points.size() == 4);
        int on_front = 0;
        for (const auto& p : st.points) {
            CHECK(p.items == 2);
            CHECK(p.accuracy >= 0.0);
            CHECK(p.accuracy <= 1.0);
            CHECK(p.tokens_per_s > 0);
            on_front += p.pareto;
        }
        CHECK(on_front >= 1);  // the fastest of the most accurate is always on it
    }
    {
        SuiteSweepJob job(q);
        job.cancel();
        job.run(model.get());
        const SuiteSweepState st = job.state();
        CHECK(st.finished);
        CHECK(st.cancelled);
        CHECK(st.points.empty());  // a run stopped part-way is not a measurement
    }
    {
        SuiteSweepJob job(q);
        job.run(nullptr);
        CHECK(job.finished());
        CHECK(job.state().error.find("no model loaded") == 0);
    }
    {
        q.task = "nope";
        SuiteSweepJob job(q);
        job.run(model.get());
        CHECK(job.state().error.find("task sweep: ") == 0);
        CHECK(job.state().error.find("unknown task") != std::string::npos);
    }
    // The panel's settings: a bad tau list or limit is refused before any job exists.
    SuiteTune t;
    std::snprintf(t.taus, sizeof t.taus, "0.9,1.5");
    CHECK_THROWS_AS(suite_request(t, tiny_params()), InputError);
    std::snprintf(t.taus, sizeof t.taus, "0.95");
    t.limit                   = 3;
    t.stable_rows[1]          = true;  // incremental
    t.stable_rows[3]          = true;  // exact
    const SuiteSweepRequest r = suite_request(t, tiny_params());
    CHECK(r.task == "add");
    CHECK(r.taus == std::vector<float>{0.95f});
    CHECK(r.options.limit == 3);
    REQUIRE(r.methods.size() == 2);
    CHECK(r.methods[0].stable_rows == "incremental");
    CHECK(r.methods[1].stable_rows == "exact");
    // Every method: the dyllm entries, then each other registered method once at its defaults.
    t.every_method              = true;
    const SuiteSweepRequest all = suite_request(t, tiny_params());
    REQUIRE(all.methods.size() == 2 + all_methods().size() - 1);
    for (size_t i = 2, j = 0; j < all_methods().size(); ++j) {
        if (all_methods()[j] == Method::DyLLM) continue;
        CHECK(all.methods[i].method == all_methods()[j]);
        CHECK(all.methods[i++].stable_rows.empty());
    }
    t.every_method = false;
    t.limit        = 0;
    CHECK_THROWS_AS(suite_request(t, tiny_params()), InputError);
}

TEST_CASE("studio: the Tune panel's suite sweep runs on the engine worker in the background", "[suite_sweep]") {
    StudioOptions o;
    o.model   = tiny_with_tasks().string();
    o.params  = tiny_params();
    o.threads = 1;
    o.speed   = 0;
    Studio s(o);
    s.open(false);
    s.suite.task_idx = 0;  // add
    s.suite.limit    = 2;
    std::snprintf(s.suite.taus, sizeof s.suite.taus, "0.9,0.99");
    s.start_suite_sweep();
    REQUIRE(s.suite.job);
    // The UI thread never waits on the job: it polls its state once per frame.
    const auto t_end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!s.suite.job->finished() && std::chrono::steady_clock::now() < t_end) {
        s.pump_events(5.0);
        s.begin_frame();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const SuiteSweepState st = s.suite.job->state();
    REQUIRE(st.finished);
    CHECK(st.error.empty());
    REQUIRE(st.points.size() == 4);  // original, fast-dual, dyllm at 2 taus
    CHECK(st.points[0].run.method == Method::Original);
    CHECK(st.points[1].run.method == Method::FastDual);
    // The Controls bar's stable-row update (the studio starts with incremental) is the dyllm points' update.
    CHECK(st.points[2].run.stable_rows == stable_rows_of(s.make_request(false).params));
    // A second sweep, then a restart: the restart cancels the sweep holding the engine, and the new run starts.
    s.start_suite_sweep();
    auto job2 = s.suite.job;
    REQUIRE(job2 != nullptr);
    s.restart(true);
    const auto t2 = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!job2->finished() && std::chrono::steady_clock::now() < t2)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(job2->finished());
}
