// `dyllm report`: the paper's figures reproduced on one model, as PNG + CSV pairs in one directory: per-layer cosine
// distributions, L_sal per layer, accuracy against tau, approx-vs-exact drift per layer, and DyLLM vs Fast-dLLM
// dual-cache throughput against n_u. Task prompts and scoring are `dyllm eval`'s (app/model/task_eval.h).
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "app/cli/cli_common.h"
#include "app/cli/command.h"
#include "app/model/report_figures.h"
#include "app/model/report_probe.h"
#include "app/model/task_eval.h"
#include "app/model/task_suite.h"
#include "engine/engine.h"
#include "engine/errors.h"
#include "engine/io/atomic_file.h"

namespace dyllm::cli {
namespace {

namespace fs = std::filesystem;

struct ReportOptions {
    ModelOptions model;
    std::string  output;
    int          limit      = 10;  // items per task for the accuracy sweep: a few minutes on the built-in models
    std::string  taus       = "0.95,0.98,0.99,0.995,0.999";
    int          shots      = 4;
    int          probe      = 2;  // items per task for the saliency, drift and throughput runs
    int          gen_length = 64;
    std::string  tasks_dir;
};

// Creates DIR and proves it writable before the (minutes long) runs, so a bad -o fails at once with the reason.
void prepare_output_dir(const fs::path& dir) {
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
        throw InputError("-o: '" + dir.string() + "' exists and is not a directory");
    fs::create_directories(dir, ec);
    if (ec) throw InputError("-o: cannot create directory '" + dir.string() + "': " + ec.message());
    const fs::path probe = dir / ".dyllm-report-write-test";
    try {
        AtomicFile f(probe);  // created and removed again: the directory takes files
    } catch (const LoadError& e) {
        throw InputError(std::string("-o: cannot write into '") + dir.string() + "': " + e.what());
    }
}

void write_figure(const fs::path& dir, const app::ReportFigure& f) {
    const fs::path     csv = dir / (f.name + ".csv"), png = dir / (f.name + ".png");
    std::ostringstream os;
    app::write_csv(os, f.table);
    try {
        write_file_atomic(csv, os.str());  // engine/io/atomic_file.h: complete or not there
    } catch (const LoadError& e) {
        throw InputError(std::string("-o ") + e.what());
    }
    std::string err;
    if (!app::render_figure(f.figure).write_png(png.string(), &err)) throw InputError("-o: " + err);
    std::printf("report: wrote %s and %s\n", csv.string().c_str(), png.string().c_str());
}

// Sum of eval_task over every suite.
TaskScore eval_all(const Model& model, const std::vector<TaskSuite>& suites, const DiffusionParams& p, int limit,
                   int shots, EventSink* sink) {
    TaskScore all;
    all.name = "all";
    for (const auto& s : suites) {
        const TaskScore t = eval_task(model, s, p, {limit, shots, 16, false}, sink);
        all.n += t.n;
        all.correct += t.correct;
        all.generated_tokens += t.generated_tokens;
        all.denoise_s += t.denoise_s;
        all.flops += t.flops;
        all.dense_flops += t.dense_flops;
    }
    return all;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run_report(const ReportOptions& o) {
    // Model-independent checks first: bad flags and an unwritable directory before any model load or run.
    const std::vector<float> taus = app::parse_tau_list("--taus", o.taus);
    if (o.limit < 1) throw InputError("--limit must be at least 1 (got " + std::to_string(o.limit) + ")");
    if (o.probe < 1) throw InputError("--probe must be at least 1 (got " + std::to_string(o.probe) + ")");
    if (o.shots < 0) throw InputError("--shots must be >= 0 (got " + std::to_string(o.shots) + ")");
    if (o.gen_length < 4 || o.gen_length % 4)
        throw InputError("-n must be a positive multiple of 4 (n_u = 1, 2, 4 must divide it; got " +
                         std::to_string(o.gen_length) + ")");
    if (o.output.empty()) throw InputError("-o: an output directory is required");
    const fs::path dir = o.output;
    prepare_output_dir(dir);

    std::unique_ptr<Model> model = load_model_for_cli(o.model);
    if (!model->tokenizer())
        throw LoadError(model->dir().string() + ": no tokenizer.json (report runs the text task suites)");
    const fs::path tasks = o.tasks_dir.empty() ? find_tasks_dir(model->dir()) : fs::path(o.tasks_dir);
    if (tasks.empty())
        throw LoadError("no task directory found next to " + model->dir().string() +
                        " or under DYLLM_SOURCE_DIR/assets/tasks; pass --tasks-dir DIR");
    const std::vector<TaskSuite> suites = load_tasks(tasks, "all");
    for (const auto& s : suites)
        if (int(s.items.size()) <= o.shots)
            throw InputError("--shots " + std::to_string(o.shots) + ": task '" + s.name + "' has only " +
                             std::to_string(s.items.size()) +
                             " items (each prompt takes its examples from the others)");

    const Family      family = model->config().family;
    const float       tau0   = default_tau(family);
    const std::string name   = fs::path(model->name()).filename().string();
    DiffusionParams   base;
    base.gen_length   = o.gen_length;
    base.steps        = o.gen_length;
    base.block_length = std::min(32, o.gen_length);
    base.method       = Method::DyLLM;
    validate_params(base, model->config());
    const auto t_start = std::chrono::steady_clock::now();

    // Figures 1, 2, 4: the saliency and drift probes, the authors' update and the incremental one at the family tau.
    std::vector<app::ProbeRun> probes;
    for (bool incremental : {false, true}) {
        DiffusionParams p    = base;
        p.measure_drift      = true;  // measured only: the decode is the same (engine/README.md §a.12)
        p.approx_incremental = incremental;
        app::SaliencyProbe sink;
        const auto         t0 = std::chrono::steady_clock::now();
        (void)eval_all(*model, suites, p, o.probe, o.shots, &sink);
        probes.push_back({incremental ? "incremental" : "authors", tau0, sink.layers()});
        std::fprintf(stderr, "report: saliency and drift probe, %s update (%.1f s)\n", probes.back().update.c_str(),
                     seconds_since(t0));
    }
    write_figure(dir, app::cosine_by_layer_figure(probes[0], name));
    write_figure(dir, app::lsal_by_layer_figure(probes, name));
    write_figure(dir, app::drift_by_layer_figure(probes, name));

    // Figure 3: accuracy against tau, `dyllm eval`'s scoring over every task.
    std::vector<app::AccuracyPoint> acc;
    auto                            add_point = [&](const std::string& variant, float tau, const DiffusionParams& p) {
        const auto      t0 = std::chrono::steady_clock::now();
        const TaskScore s  = eval_all(*model, suites, p, o.limit, o.shots, nullptr);
        acc.push_back({variant, tau, s.n, s.correct, s.dense_flops > 0 ? s.flops / s.dense_flops : 1.0,
                       s.denoise_s > 0 ? double(s.generated_tokens) / s.denoise_s : 0.0});
        char at[32] = "";
        if (!std::isnan(tau)) std::snprintf(at, sizeof at, " tau %g", double(tau));
        std::fprintf(stderr, "report: accuracy %s%s: %d/%d, FLOPs vs dense %.3f (%.1f s)\n", variant.c_str(), at,
                                                s.correct, s.n, acc.back().flops_vs_dense, seconds_since(t0));
    };
    {
        DiffusionParams p = base;
        p.method          = Method::Original;
        add_point("original", NAN, p);
    }
    struct Variant {
        const char* name;
        bool        incremental, approx;
    };
    for (const Variant v : {Variant{"dyllm", false, true}, Variant{"dyllm --approx-incremental", true, true},
                            Variant{"dyllm --no-approx", false, false}})
        for (float tau : taus) {
            DiffusionParams p    = base;
            p.tau                = tau;
            p.approx             = v.approx;
            p.approx_incremental = v.incremental;
            validate_params(p, model->config());
            add_point(v.name, tau, p);
        }
    write_figure(dir, app::accuracy_vs_tau_figure(acc, name, o.shots, o.limit));

    // Figure 5: DyLLM (authors' default) vs Fast-dLLM dual cache at n_u = 1, 2, 4 on the probe prompts. One warm-up
    // run first (weights and caches touched, thread pool started) so the first timed point is not penalised.
    std::vector<app::ThroughputPoint> thr;
    (void)eval_all(*model, suites, base, o.probe, o.shots, nullptr);
    for (Method m : {Method::DyLLM, Method::FastDual})
        for (int n_u : {1, 2, 4}) {
            DiffusionParams p = base;
            p.method          = m;
            p.steps           = o.gen_length / n_u;
            validate_params(p, model->config());
            const TaskScore s = eval_all(*model, suites, p, o.probe, o.shots, nullptr);
            thr.push_back({method_name(m), n_u, p.steps,
                           s.denoise_s > 0 ? double(s.generated_tokens) / s.denoise_s : 0.0,
                           s.generated_tokens > 0 ? s.flops / double(s.generated_tokens) : 0.0,
                           s.dense_flops > 0 ? s.flops / s.dense_flops : 1.0});
            std::fprintf(stderr, "report: throughput %s n_u %d: %.1f tokens/s\n", method_name(m), n_u,
                         thr.back().tokens_per_s);
        }
    write_figure(dir, app::throughput_vs_nu_figure(thr, name));
    std::printf("report: %s, 5 figures in %s (%.0f s)\n", name.c_str(), dir.string().c_str(), seconds_since(t_start));
    return 0;
}

const CommandRegistrar kRegistrar{Command{
    "report", [](CLI::App& app) -> std::function<int()> {
        app.description("write PNG + CSV analogues of the DyLLM paper's figures for one model into a directory");
        auto o = std::make_shared<ReportOptions>();
        add_model_options(app, o->model);
        app.add_option("-o,--output", o->output, "directory to write the figures into (created if missing)")
            ->required();
        app.add_option("--limit", o->limit, "items per task in the accuracy sweep")->capture_default_str();
        app.add_option("--taus", o->taus, "comma-separated taus of the accuracy sweep, each in (0, 1]")
            ->capture_default_str();
        app.add_option("--shots", o->shots, "solved examples per task prompt")->capture_default_str();
        app.add_option("--probe", o->probe, "items per task in the saliency, drift and throughput runs")
            ->capture_default_str();
        app.add_option("-n,--gen-length", o->gen_length, "response length (a multiple of 4)")->capture_default_str();
        app.add_option("--tasks-dir", o->tasks_dir, "directory of <task>.jsonl files (default: found automatically)");
        return [o] { return run_report(*o); };
    }}};

}  // namespace
}  // namespace dyllm::cli
