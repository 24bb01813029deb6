// The studio's task-suite sweep job (app/model/suite_sweep_job.h): runs on the engine worker's thread, publishes
// progress and points under a mutex, stops at the next step when cancelled.
#include "app/model/suite_sweep_job.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "engine/errors.h"

namespace dyllm::app {

namespace {
double steady_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

SuiteSweepJob::SuiteSweepJob(SuiteSweepRequest req) : req_(std::move(req)) {}

SuiteSweepState SuiteSweepJob::state() const {
    std::lock_guard lk(mutex_);
    SuiteSweepState s = state_;
    if (s.started && !s.finished) s.elapsed_s = steady_s() - t0_;
    return s;
}

bool SuiteSweepJob::finished() const {
    std::lock_guard lk(mutex_);
    return state_.finished;
}

void SuiteSweepJob::fail(const std::string& msg) {
    std::lock_guard lk(mutex_);
    state_.error    = msg;
    state_.finished = true;
    state_.current.clear();
}

void SuiteSweepJob::run(const Model* model) {
    {
        std::lock_guard lk(mutex_);
        state_.started = true;
        t0_            = steady_s();
    }
    if (!model) return fail("no model loaded: the sweep needs one (choose a model in the Controls bar)");
    try {
        if (!model->tokenizer())
            return fail(model->dir().string() + ": no tokenizer.json (a task suite needs text prompts and answers)");
        const std::filesystem::path dir = req_.tasks_dir.empty() ? find_tasks_dir(model->dir()) : req_.tasks_dir;
        if (dir.empty())
            return fail("no task directory next to " + model->dir().string() +
                        " or under DYLLM_SOURCE_DIR/assets/tasks");
        const std::vector<TaskSuite> suites = load_tasks(dir, req_.task);
        const std::vector<SuiteRun>  runs =
            suite_runs(req_.base, model->config().family, req_.methods, req_.taus, req_.references);
        for (const auto& r : runs) validate_params(r.params, model->config());  // every run checked before the first
        {
            std::lock_guard lk(mutex_);
            state_.runs = int(runs.size());
        }
        SuiteOptions o = req_.options;
        o.cancel       = &cancel_;
        if (!runs.empty()) {  // warm-up, as `dyllm bench --task`: first touches would land in the first run's time
            SuiteOptions w = o;
            w.limit        = 1;
            (void)run_suite_point(*model, {suites.front()}, runs.front(), w);
        }
        const int reps = std::max(1, req_.repetitions);
        for (const auto& r : runs) {
            std::vector<SuitePoint> samples;
            bool                    cancelled = false;
            for (int k = 0; k < reps && !cancelled; ++k) {
                {
                    std::lock_guard lk(mutex_);
                    state_.current = reps > 1
                                         ? r.label() + " (" + std::to_string(k + 1) + "/" + std::to_string(reps) + ")"
                                         : r.label();
                }
                samples.push_back(run_suite_point(*model, suites, r, o));
                cancelled = samples.back().cancelled;
            }
            std::lock_guard lk(mutex_);
            if (cancelled) break;  // a partial point is not a measurement
            state_.points.push_back(merge_repetitions(samples));
            mark_pareto(state_.points);
            state_.done += 1;
        }
    } catch (const std::exception& e) {  // InputError, LoadError (a bad task file), BackendError
        return fail(std::string("task sweep: ") + e.what());
    }
    std::lock_guard lk(mutex_);
    state_.cancelled = cancel_.load();
    state_.finished  = true;
    state_.elapsed_s = steady_s() - t0_;
    state_.current.clear();
}

SuiteTune::SuiteTune() = default;

SuiteTune::~SuiteTune() {
    if (job) job->cancel();
}

SuiteSweepRequest suite_request(const SuiteTune& t, const DiffusionParams& base) {
    if (t.limit < 1)
        throw InputError("task sweep: items per task must be at least 1 (got " + std::to_string(t.limit) + ")");
    const int n_tasks = int(sizeof kSuiteTasks / sizeof kSuiteTasks[0]);
    if (t.task_idx < 0 || t.task_idx >= n_tasks) throw InputError("task sweep: no task chosen");
    SuiteSweepRequest q;
    q.task          = kSuiteTasks[t.task_idx];
    q.base          = base;
    q.taus          = t.taus[0] ? parse_sweep_taus("tau list", t.taus) : default_suite_taus();
    q.references    = true;
    q.options.limit = t.limit;
    q.repetitions   = std::clamp(t.repetitions, 1, 20);
    for (int i = 0; i < 4; ++i)
        if (t.stable_rows[i]) q.methods.push_back({Method::DyLLM, kStableRowNames[i]});
    if (q.methods.empty()) q.methods.push_back({Method::DyLLM, ""});
    if (t.every_method)
        for (Method m : all_methods())
            if (m != Method::DyLLM) q.methods.push_back({m, ""});
    return q;
}

}  // namespace dyllm::app
