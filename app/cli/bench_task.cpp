// `dyllm bench --task`: a sweep of tau and methods on a task suite (app/model/suite_sweep.h), scored as `dyllm eval`
// scores it: accuracy, engine tokens/s and FLOPs per (method, tau), original and fast-dual as references, the Pareto
// front.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/cli/bench.h"
#include "app/model/task_suite.h"
#include "engine/errors.h"

namespace dyllm::cli::bench {
namespace {

// Everything a --task sweep refuses, checked before the model loads. Returns the swept taus and methods.
struct TaskSweepArgs {
    std::vector<float>            taus;     // empty: the family default
    std::vector<app::SweepMethod> methods;  // the dyllm entries and any others (references added when not given)
};

TaskSweepArgs check_task_args(const BenchOptions& o) {
    if (o.limit != -1 && o.limit < 1)
        throw InputError("--limit must be at least 1 (got " + std::to_string(o.limit) + ")");
    if (o.shots_given && o.shots < 0) throw InputError("--shots must be >= 0 (got " + std::to_string(o.shots) + ")");
    if (!o.prompts.empty()) throw InputError("-p and --task exclude each other");
    if (o.no_chat)
        throw InputError("--no-chat: a --task sweep builds its prompts as `dyllm eval` does (chat template)");
    if (o.reps < 1) throw InputError("-r/--reps must be at least 1 (got " + std::to_string(o.reps) + ")");
    for (const auto& [flag, text] : {std::pair<const char*, std::string>{"--steps", o.steps},
                                     {"--block-length", o.blocks},
                                     {"--batch", o.batches}})
        if (text.find(',') != std::string::npos)
            throw InputError(std::string(flag) + " " + text +
                             ": a --task sweep takes one value (it sweeps --tau and "
                             "--methods; run one sweep per value)");
    TaskSweepArgs a;
    if (o.taus_given) a.taus = app::parse_sweep_taus("--tau", o.taus);
    if (o.methods_given)
        a.methods = app::parse_sweep_methods("--methods", o.methods);
    else
        a.methods = {{Method::DyLLM, ""}};
    return a;
}

// One value of --steps / --block-length / --batch, or its default.
int single_int(const char* flag, const std::string& text, int dflt) {
    if (text.empty()) return dflt;
    const int64_t v = parse_int_arg(flag, text);
    if (v <= 0 || v > INT32_MAX) throw InputError(std::string(flag) + " must be positive (got " + text + ")");
    return int(v);
}

// -r N: each run N times; accuracy and FLOPs over all of them, tokens/s the median (greedy decoding repeats itself,
// so only the time varies).
app::SuitePoint combine_reps(const std::vector<app::SuitePoint>& reps) {
    app::SuitePoint p = reps.front();
    if (reps.size() == 1) return p;
    std::vector<double> tps, den;
    p.items = p.correct = 0;
    double fpt = 0, fvd = 0;
    for (const auto& r : reps) {
        p.items += r.items;
        p.correct += r.correct;
        tps.push_back(r.tokens_per_s);
        den.push_back(r.denoise_s);
        fpt += r.flops_per_token;
        fvd += r.flops_vs_dense;
    }
    p.accuracy        = p.items ? double(p.correct) / p.items : 0.0;
    p.items           = reps.front().items;  // items per repetition, as the table says
    p.correct         = int(std::lround(p.accuracy * p.items));
    p.tokens_per_s    = median(tps);
    p.denoise_s       = median(den);
    p.flops_per_token = fpt / double(reps.size());
    p.flops_vs_dense  = fvd / double(reps.size());
    return p;
}

}  // namespace

int run_task_sweep(const BenchOptions& o, const OutputTarget& target, AtomicFile* file) {
    const TaskSweepArgs    args  = check_task_args(o);
    std::unique_ptr<Model> model = load_model_for_cli(o.model, o.json || target.format == "json");
    if (!model->tokenizer())
        throw LoadError(model->dir().string() + ": no tokenizer.json (--task needs text prompts and answers)");
    const std::filesystem::path dir = find_tasks_dir(model->dir());
    if (dir.empty())
        throw LoadError("--task " + o.task + ": no task directory next to " + model->dir().string() +
                        " or under DYLLM_SOURCE_DIR/assets/tasks");
    const std::vector<TaskSuite> suites = load_tasks(dir, o.task);  // an unknown task names the known ones

    DiffusionOptions d   = o.fixed;
    const int        gen = d.params.gen_length;
    if (gen <= 0) throw InputError("-n must be positive (got " + std::to_string(gen) + ")");
    if (!o.steps.empty()) d.set(&DiffusionParams::steps, "steps", single_int("--steps", o.steps, gen));
    if (!o.blocks.empty())
        d.set(&DiffusionParams::block_length, "block_length", single_int("--block-length", o.blocks, 32));
    const DiffusionParams            base = to_diffusion_params(d);
    const std::vector<app::SuiteRun> runs =
        app::suite_runs(base, model->config().family, args.methods, args.taus, !o.methods_given);
    for (const auto& r : runs) validate_params(r.params, model->config());  // every run checked before the first
    app::SuiteOptions so;
    so.limit       = o.limit == -1 ? 0 : o.limit;  // 0: every item (eval_task)
    so.shots       = o.shots;
    so.batch       = o.batches_given ? single_int("--batch", o.batches, 16) : 16;  // `dyllm eval`'s batch by default
    const int reps = o.reps_given ? o.reps : 1;                                    // the items already average the time

    size_t n_items = 0;
    for (const auto& s : suites) n_items += so.limit > 0 ? std::min(s.items.size(), size_t(so.limit)) : s.items.size();
    std::fprintf(stderr, "bench: model %s (%s), backend %s, task %s (%zu items), %zu runs x %d rep%s, batch %d\n",
                 model->name().c_str(), family_name(model->config().family), model->backend().description().c_str(),
                 o.task.c_str(), n_items, runs.size(), reps, reps == 1 ? "" : "s", so.batch);
    {  // warm-up: first touch of the weights and the thread pool start would otherwise land in the first run's time
        app::SuiteOptions w = so;
        w.limit             = 1;
        (void)app::run_suite_point(*model, {suites.front()}, runs.front(), w);
    }
    std::vector<app::SuitePoint> pts;
    for (size_t i = 0; i < runs.size(); ++i) {
        std::vector<app::SuitePoint> rep;
        for (int r = 0; r < reps; ++r) rep.push_back(app::run_suite_point(*model, suites, runs[i], so));
        pts.push_back(combine_reps(rep));
        const app::SuitePoint& p = pts.back();
        std::fprintf(stderr, "bench: %zu/%zu %s: accuracy %.3f (%d/%d), %.1f tok/s, FLOPs vs dense %.3f\n", i + 1,
                     runs.size(), runs[i].label().c_str(), p.accuracy, p.correct, p.items, p.tokens_per_s,
                     p.flops_vs_dense);
    }
    app::mark_pareto(pts);

    const app::SuiteContext ctx{o.task, model->name(), model->backend().name(), o.shots, so.batch};
    auto                    format = [&](const std::string& f) {
        if (f == "json") {
            nlohmann::ordered_json arr = nlohmann::ordered_json::array();
            for (const auto& p : pts) arr.push_back(point_json(p, ctx));
            return arr.dump(2) + "\n";
        }
        if (f == "csv") {
            std::ostringstream os;
            app::write_csv(os, app::suite_csv(pts, ctx));
            return os.str();
        }
        return task_table(pts);
    };
    const std::string shown = o.json ? "json" : target.file.empty() ? target.format : "md";
    if (file) {
        commit_output_file(*file, format(target.format));
        std::fprintf(stderr, "bench: wrote %s\n", target.file.c_str());
    }
    std::fputs(format(shown).c_str(), stdout);
    std::fflush(stdout);
    return 0;
}

}  // namespace dyllm::cli::bench
