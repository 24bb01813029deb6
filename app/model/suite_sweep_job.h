// The studio's task-suite sweep as a job the engine worker runs on its own thread (it owns the model): the runs one
// after another, progress and points readable from the UI thread at any time, cancel from any thread. Plus the Tune
// panel's suite settings (plain data, no ImGui) and how they become a sweep request.
#pragma once
#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "app/model/suite_sweep.h"

namespace dyllm::app {

// The runs are made by suite_runs() once the model (and so the family's default tau) is known.
struct SuiteSweepRequest {
    std::string              task = "add";  // a task name or "all"
    std::filesystem::path    tasks_dir;     // "" = found next to the model (find_tasks_dir)
    DiffusionParams          base;
    std::vector<SweepMethod> methods;
    std::vector<float>       taus;
    bool                     references  = true;
    int                      repetitions = 1;  // runs per configuration; the point's tokens/s is their median
    SuiteOptions             options;          // limit, shots, batch (cancel is the job's own)
};

// What the UI shows: a copy taken under the job's mutex.
struct SuiteSweepState {
    bool                    started   = false;  // the worker picked the job up
    bool                    finished  = false;  // every run done, or cancelled, or failed
    bool                    cancelled = false;
    std::string             error;  // a run or the suite load failed: one line
    int                     runs = 0, done = 0;
    std::string             current;        // label of the run in progress
    double                  elapsed_s = 0;  // since the worker picked the job up
    std::vector<SuitePoint> points;         // finished runs, Pareto front marked
};

class SuiteSweepJob {
public:
    explicit SuiteSweepJob(SuiteSweepRequest req);
    // On the engine's thread: loads the suites, then runs every run (model null: no model loaded, an error).
    void            run(const Model* model);
    void            cancel() { cancel_.store(true); }  // any thread: the run in progress stops at its next step
    SuiteSweepState state() const;
    bool            finished() const;

private:
    void fail(const std::string& msg);

    SuiteSweepRequest  req_;
    std::atomic<bool>  cancel_{false};
    mutable std::mutex mutex_;
    SuiteSweepState    state_;
    double             t0_ = 0;
};

// The Tune panel's task-suite mode: its settings, and the job in flight (or the last one).
struct SuiteTune {
    static constexpr int kDefaultLimit  = 10;  // items per task: a sweep on tiny-llada takes well under a minute
    int                  task_idx       = 0;   // into kSuiteTasks
    int                  limit          = kDefaultLimit;
    int                  repetitions    = 3;   // runs per configuration: a point's tokens/s is their median, with range
    char                 taus[128]      = {};  // the tau list as typed; "" = default_suite_taus()
    bool                 stable_rows[4] = {};  // dyllm updates to sweep (kStableRowNames order); none: the base's
    bool                 every_method   = false;  // also every other registered method, once each at its defaults
    std::shared_ptr<SuiteSweepJob> job;
    SuiteSweepState                shown;  // the job's state, copied once per frame

    SuiteTune();
    ~SuiteTune();  // cancels a job still running, so the worker (and the app) can stop
    SuiteTune(const SuiteTune&)            = delete;
    SuiteTune& operator=(const SuiteTune&) = delete;
    bool       running() const { return job && !job->finished(); }
};
inline constexpr const char* kSuiteTasks[] = {"add", "sort", "word", "rev", "all"};

// The request of a sweep with these settings: references original and fast-dual, then dyllm at each tau with each
// chosen stable-row update (base's when none is chosen), then (every_method) each other method once; the other
// settings from base. Throws InputError for a bad
// tau list or limit.
SuiteSweepRequest suite_request(const SuiteTune& t, const DiffusionParams& base);

}  // namespace dyllm::app
