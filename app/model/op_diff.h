// Per-op-class time of two runs side by side (Compare's "Op times" tab): each run's total per class, the spread of
// the per-step times (p10, median, p90) and the ratio B/A, so one preempted step cannot pass for a speed-up.
#pragma once
#include <vector>

#include "app/model/run_history.h"

namespace dyllm::app {

// Quantiles of a sample, linearly interpolated between order statistics (numpy's default "linear" method).
struct Spread {
    int    n   = 0;
    double p10 = 0, median = 0, p90 = 0;
};
Spread spread_of(std::vector<double> v);

// What a row of the diff sums: one op class, the step time outside every timed op (StepData::outside_ops_seconds),
// every op, or the step wall time (ops + outside ops: the time tokens/s is measured on).
enum class DiffRow : uint8_t { Class, OutsideOps, AllOps, Wall };
const char* diff_row_name(DiffRow r);  // "outside ops", "all ops", "step wall"; "" for Class

// One op class in both runs. op == OpClass::Count for the rows that are no single class.
struct OpClassDiff {
    DiffRow row     = DiffRow::Class;
    OpClass op      = OpClass::Other;
    double  total_a = 0, total_b = 0;  // seconds over the run's ended steps
    Spread  a, b;                      // per-step seconds over the steps where the class ran (> 0)
    double  ratio        = 0;          // total_b / total_a; 0 when A has no time in the class
    double  median_ratio = 0;          // b.median / a.median; 0 when A has none
};

// Classes with time in either run, in OpClass order, then the outside-ops, all-ops and step-wall rows.
std::vector<OpClassDiff> op_class_diff(const RunHistory& a, const RunHistory& b);

}  // namespace dyllm::app
