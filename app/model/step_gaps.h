// A step's time span on the steady clock and the intervals inside it that no timed op covers (the scheduler,
// sampling bookkeeping, waits for the pool, hand-offs): the Time panel's timeline draws them as visible gaps, the
// "outside ops" class of the tables and bars.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "app/model/run_history.h"

namespace dyllm::app {

struct TimeSpan {
    int64_t t0 = 0, t1 = 0;  // ns, steady clock; t1 > t0
    int64_t dur() const { return t1 - t0; }
};

struct StepGaps {
    TimeSpan              span;  // StepBegin to StepBegin + wall (widened to every op); the ops' extent when unknown
    std::vector<TimeSpan> gaps;  // ascending, disjoint, inside span: no op running
    int64_t               gap_ns = 0;  // their sum
};

// Empty span (t0 == t1 == 0) for a step without ops and without a wall time.
StepGaps step_gaps(const StepData& sd);

// Statistics of a time range selected in the timeline: the ops' time inside it (clipped at its ends) by class, and
// the outside-ops time of the gaps inside it. Times on any one axis (the timeline's laid-out ns).
struct RangeOp {
    int64_t t0 = 0, t1 = 0;
    OpClass op = OpClass::Other;
};
struct RangeStats {
    int64_t                         span_ns = 0, ops_ns = 0, outside_ns = 0;
    int                             n_ops = 0;  // ops overlapping the range
    std::array<int64_t, kOpClasses> by_class{};
};
RangeStats range_stats(const std::vector<RangeOp>& ops, const std::vector<TimeSpan>& gaps, int64_t t0, int64_t t1);

}  // namespace dyllm::app
