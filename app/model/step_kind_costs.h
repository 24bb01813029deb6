// Where a run's work goes, by step kind: the engine's own per-step accounting (StepEnd's FLOPs and wall time, the
// StepBegin kind of instrumentation/step_kinds.def) summed per kind and accumulated over the steps, so the Why tab can
// set DyLLM's dense and full-query steps against Fast-dLLM's per-block refreshes step by step.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "app/model/run_history.h"

namespace dyllm::app {

constexpr size_t kStepKinds = size_t(StepKind::Count);

// One step kind's share of a run.
struct KindCost {
    int32_t steps   = 0;
    double  flops   = 0;  // StepEnd::flops summed
    double  seconds = 0;  // StepEnd::wall_ns summed (ops + outside ops; never the play pacing between steps)
};

struct StepKindCosts {
    std::string                      method;                  // RunBegin's method
    int32_t                          steps = 0;               // ended steps counted (in step order, gaps skipped)
    std::vector<StepKind>            kind;                    // per counted step
    std::vector<int32_t>             step;                    // per counted step: its 1-based step number
    std::vector<double>              cum_flops, cum_seconds;  // after each counted step
    std::array<KindCost, kStepKinds> by_kind{};
    double                           flops = 0, seconds = 0, dense_flops = 0;  // totals (dense: StepEnd::dense_flops)
};

// The ended steps of h in step order (a step without its StepEnd adds nothing: its FLOPs and time are not known).
StepKindCosts step_kind_costs(const RunHistory& h);

// The cumulative value after step k (1-based step number) of a curve: the last counted step <= k, 0 before the first.
double cumulative_at(const StepKindCosts& c, const std::vector<double>& curve, int step);

// The first step number at which a's cumulative curve exceeds b's for good (a stays above from there to the end of
// the shorter run), or -1 when it never does. Used for the "Fast-dLLM's refreshes overtake DyLLM at step S" line.
int overtakes_from(const StepKindCosts& a, const std::vector<double>& a_curve, const StepKindCosts& b,
                   const std::vector<double>& b_curve);

// step_kind,<method>_steps,<method>_gflop,<method>_ms,... one row per kind some run ran, then a "total" row: the
// Why tab's table as CSV.
std::string step_kind_costs_csv(const std::vector<const StepKindCosts*>& runs);

}  // namespace dyllm::app
