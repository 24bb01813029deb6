// A sweep of tau and methods on a task suite, scored as `dyllm eval` scores it (app/model/task_eval.h): the runs it
// makes (original and fast-dual as references, dyllm once per tau), one point per run (accuracy, engine tokens/s,
// FLOPs) and the Pareto front over (tokens/s, accuracy). Shared by `dyllm bench --task` and the studio's Tune panel.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "app/model/report_figures.h"
#include "app/model/task_suite.h"
#include "engine/engine.h"

namespace dyllm::app {

// DyLLM's stable-row update (engine/README.md §a.13) by the names the sweep uses: "authors" (the default),
// "incremental", "columns", "exact" (no approximation, the Salient ablation).
inline constexpr const char* kStableRowNames[] = {"authors", "incremental", "columns", "exact"};
std::string                  stable_rows_of(const DiffusionParams& p);
// Sets approx / approx_incremental / approx_columns for one of kStableRowNames; false for an unknown name.
bool set_stable_rows(DiffusionParams& p, const std::string& name);

// One entry of a sweep's method list: "dyllm", "dyllm:incremental", "fast-dual", ...
struct SweepMethod {
    Method      method = Method::DyLLM;
    std::string stable_rows;  // dyllm only: "" = as the base settings, else one of kStableRowNames
};
// Throws InputError naming `flag` for an unknown method or update, or an update on a method other than dyllm.
SweepMethod              parse_sweep_method(const std::string& flag, const std::string& text);
std::vector<SweepMethod> parse_sweep_methods(const std::string& flag, const std::string& list);

// "0.9,0.99": each item a number strictly inside (0, 1) (tau = 1 marks every row salient: that is `original`), at
// least one, no duplicates. Throws InputError naming `flag` and the bad item.
std::vector<float> parse_sweep_taus(const std::string& flag, const std::string& text);

// The taus the studio's suite sweep offers by default (a spread on log(1 - tau) around the paper's 0.99).
std::vector<float> default_suite_taus();

// One configuration of the sweep.
struct SuiteRun {
    Method          method = Method::DyLLM;
    float           tau    = 0;         // NaN for methods without a tau
    std::string     stable_rows;        // dyllm: the update used ("authors", ...); "" for other methods
    bool            reference = false;  // original or fast-dual: drawn as reference markers
    DiffusionParams params;
    std::string     label() const;  // "original", "fast-dual", "dyllm 0.99", "dyllm incremental 0.99"
};

// The runs of a sweep over `methods` and `taus` with the other settings of `base`. references: original and fast-dual
// first (once each; the user's method list did not name methods). DyLLM runs once per tau (an empty list: base's tau,
// NaN = the family default); other methods once. A method named twice runs once.
std::vector<SuiteRun> suite_runs(const DiffusionParams& base, Family family, const std::vector<SweepMethod>& methods,
                                 const std::vector<float>& taus, bool references);

struct SuiteOptions {
    int                      limit  = 10;  // items per task (>= 1)
    int                      shots  = -1;  // as TaskEvalOptions::shots
    int                      batch  = 16;  // sequences per lock-step session, as `dyllm eval`
    const std::atomic<bool>* cancel = nullptr;
};

// One run's result, summed over the suites of the task ("all": every suite).
struct SuitePoint {
    SuiteRun run;
    int      items = 0, correct = 0;
    double   accuracy     = 0;  // correct / items
    double   tokens_per_s = 0;  // response tokens (gen length x items) over the engine's denoising time
    // Repeated runs (SuiteSweepRequest::repetitions): tokens_per_s is their median, these its range.
    int     repetitions     = 1;
    double  tokens_per_s_lo = 0, tokens_per_s_hi = 0;
    double  flops_per_token  = 0;  // the engine's accounted FLOPs per response token
    double  flops_vs_dense   = 1;  // accounted FLOPs over a dense forward of every step
    double  denoise_s        = 0;
    int64_t generated_tokens = 0, forward_passes = 0;
    bool    cancelled = false;  // stopped by SuiteOptions::cancel: not a measurement
    bool    pareto    = false;  // filled by mark_pareto
};

// Runs `run` on the first o.limit items of each suite through eval_task (the same prompts, sessions and scoring as
// `dyllm eval`). Throws InputError for settings the engine refuses or prompts that do not fit max_position.
SuitePoint run_suite_point(const Model& model, const std::vector<TaskSuite>& suites, const SuiteRun& run,
                           const SuiteOptions& o);

// Folds repeated runs of one configuration into the first: tokens/s (and the denoising time) the median of the runs,
// tokens_per_s_lo/hi their range; accuracy, FLOPs and counts stay the first run's (greedy decoding repeats them).
SuitePoint merge_repetitions(const std::vector<SuitePoint>& reps);

// Marks the Pareto front over (tokens/s higher, accuracy higher) among the points not cancelled.
void mark_pareto(std::vector<SuitePoint>& pts);

// What a sweep's CSV says besides the points.
struct SuiteContext {
    std::string task, model, backend;
    int         shots = -1, batch = 16;
};
// One row per point: method,stable_rows,tau,reference,pareto,task,items,correct,accuracy,tokens_per_s,
// flops_per_token,flops_vs_dense,denoise_s,nfe (forward
// passes),gen_length,steps,block_length,batch,shots,model,backend.
CsvTable suite_csv(const std::vector<SuitePoint>& pts, const SuiteContext& c);

}  // namespace dyllm::app
