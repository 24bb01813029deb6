// `dyllm eval`: exact-match accuracy of a model on the held-out task suites (assets/tasks/*.jsonl), batched lock-step
// sessions, with a per-task accuracy + tokens/s table (or one JSON object per task with --json).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "app/cli/cli_common.h"
#include "app/cli/command.h"
#include "engine/engine.h"
#include "engine/errors.h"
#include "instrumentation/drift_tally.h"
#include "app/model/task_eval.h"
#include "app/model/task_suite.h"

namespace dyllm::cli {
namespace {

struct EvalOptions {
    ModelOptions     model;
    DiffusionOptions diffusion;
    std::string      task;
    std::string      tasks_dir;     // "" = found next to the model or in the source tree
    int              limit   = 0;   // 0 = every item
    int              shots   = -1;  // -1 = each item's own shot count
    int              batch   = 16;  // sequences per lock-step session
    bool             json    = false;
    bool             verbose = false;
};

int run_eval(const EvalOptions& o) {
    const DiffusionParams params = to_diffusion_params(o.diffusion);
    if (o.batch <= 0) throw InputError("--batch must be positive (got " + std::to_string(o.batch) + ")");
    if (o.limit < 0) throw InputError("--limit must be >= 0 (got " + std::to_string(o.limit) + ")");
    if (o.task.empty()) throw InputError("--task is required (a task name or all)");

    std::unique_ptr<Model> model = load_model_for_cli(o.model, o.json);
    validate_params(params, model->config());
    if (!model->tokenizer())
        throw LoadError(model->dir().string() + ": no tokenizer.json (eval needs text prompts and answers)");
    const std::filesystem::path dir =
        o.tasks_dir.empty() ? find_tasks_dir(model->dir()) : std::filesystem::path(o.tasks_dir);
    if (dir.empty())
        throw LoadError("no task directory found next to " + model->dir().string() +
                        " or under DYLLM_SOURCE_DIR/assets/tasks; pass --tasks-dir DIR");
    const std::vector<TaskSuite> suites = load_tasks(dir, o.task);

    const Family            family = model->config().family;
    const float             tau    = effective_tau(params, family);
    std::vector<TaskScore>  scores;
    std::vector<DriftTally> drift(suites.size());  // --measure-drift: per task, summed over its items
    for (const auto& s : suites) {
        if (!o.json) std::fprintf(stderr, "eval: %s (%zu items)...\n", s.name.c_str(), s.items.size());
        DriftTally* d = params.measure_drift ? &drift[scores.size()] : nullptr;
        scores.push_back(eval_task(*model, s, params, {o.limit, o.shots, o.batch, o.verbose}, d));
        if (o.json) {
            const TaskScore&       t = scores.back();
            nlohmann::ordered_json j;
            j["task"]                             = t.name;
            j["n"]                                = t.n;
            j["accuracy"]                         = t.n ? double(t.correct) / t.n : 0.0;
            j["full_match"]                       = t.n ? double(t.full) / t.n : 0.0;
            j["tokens_per_s"]                     = t.denoise_s > 0 ? double(t.generated_tokens) / t.denoise_s : 0.0;
            const nlohmann::ordered_json settings = params_to_json(params, family);
            for (const auto& [key, value] : settings.items()) j[key] = value;  // every setting of the table
            j["shots"]          = o.shots < 0 ? nlohmann::ordered_json("file") : nlohmann::ordered_json(o.shots);
            j["batch"]          = o.batch;
            j["model"]          = model->name();
            j["family"]         = family_name(family);
            j["backend"]        = model->backend().name();
            j["denoise_s"]      = t.denoise_s;
            j["forward_passes"] = t.forward_passes;
            j["flops"]          = t.flops;
            j["flops_vs_dense"] = t.dense_flops > 0 ? t.flops / t.dense_flops : 0.0;
            std::fprintf(stdout, "%s\n", j.dump().c_str());
            std::fflush(stdout);
        }
    }
    if (o.json) return 0;

    std::printf("model %s (%s), method %s", model->name().c_str(), family_name(family), method_name(params.method));
    if (params.method == Method::DyLLM) std::printf(", tau %.4g", tau);
    std::printf(", gen %d, steps %d, block %d, shots %s, batch %d\n\n", params.gen_length, params.steps,
                params.block_length, o.shots < 0 ? "file" : std::to_string(o.shots).c_str(), o.batch);
    std::printf("| task | n | accuracy | full match | tokens/s | denoise s | FLOPs vs dense |\n");
    std::printf("|------|--:|---------:|-----------:|---------:|----------:|---------------:|\n");
    TaskScore all;
    all.name = "all";
    for (const auto& t : scores) {
        all.n += t.n;
        all.correct += t.correct;
        all.full += t.full;
        all.generated_tokens += t.generated_tokens;
        all.denoise_s += t.denoise_s;
        all.flops += t.flops;
        all.dense_flops += t.dense_flops;
    }
    if (scores.size() > 1) scores.push_back(all);
    for (const auto& t : scores)
        std::printf("| %s | %d | %.3f | %.3f | %.1f | %.2f | %.3f |\n", t.name.c_str(), t.n,
                    t.n ? double(t.correct) / t.n : 0.0, t.n ? double(t.full) / t.n : 0.0,
                    t.denoise_s > 0 ? double(t.generated_tokens) / t.denoise_s : 0.0, t.denoise_s,
                    t.dense_flops > 0 ? t.flops / t.dense_flops : 0.0);
    for (size_t i = 0; params.measure_drift && i < suites.size(); ++i)
        std::printf("\ndrift on %s: approx-vs-exact context cosine of the approximated rows (tau %.4g)\n%s",
                    suites[i].name.c_str(), tau, drift[i].table().c_str());
    return 0;
}

const CommandRegistrar kRegistrar{Command{
    "eval", [](CLI::App& app) -> std::function<int()> {
        app.description("exact-match accuracy on the held-out task suites (assets/tasks)");
        auto o = std::make_shared<EvalOptions>();
        add_model_options(app, o->model);
        add_diffusion_options(app, o->diffusion);
        app.add_option("--task", o->task, "task name (file stem under the tasks dir) or all")->required();
        app.add_option("--tasks-dir", o->tasks_dir, "directory of <task>.jsonl files (default: found automatically)");
        app.add_option("--limit", o->limit, "items per task (0 = all)")->capture_default_str();
        app.add_option("--shots", o->shots,
                       "solved examples per prompt, taken from the preceding items (-1 = each item's own prompt)")
            ->capture_default_str();
        app.add_option("--batch", o->batch, "sequences per lock-step session")->capture_default_str();
        app.add_flag("--json", o->json, "print one JSON object per task on stdout");
        app.add_flag("-v,--verbose", o->verbose, "print every item's response and verdict on stderr");
        return [o] { return run_eval(*o); };
    }}};

}  // namespace
}  // namespace dyllm::cli
