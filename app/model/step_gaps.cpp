// A step's uncovered intervals, from its ops' begin and end times (app/model/step_gaps.h).
#include "app/model/step_gaps.h"

#include <algorithm>

namespace dyllm::app {

StepGaps step_gaps(const StepData& sd) {
    StepGaps              g;
    std::vector<TimeSpan> ops;
    ops.reserve(sd.ops.size());
    for (const OpTiming& o : sd.ops)
        if (o.dur_ns > 0) ops.push_back({o.t_begin_ns, o.t_begin_ns + o.dur_ns});
    std::sort(ops.begin(), ops.end(), [](const TimeSpan& a, const TimeSpan& b) { return a.t0 < b.t0; });
    const bool timed = sd.begun && sd.t_begin_ns > 0 && sd.ended && sd.end.wall_ns > 0;
    if (ops.empty() && !timed) return g;
    g.span = timed ? TimeSpan{sd.t_begin_ns, sd.t_begin_ns + sd.end.wall_ns} : TimeSpan{ops.front().t0, ops.front().t1};
    for (const TimeSpan& o : ops) {
        g.span.t0 = std::min(g.span.t0, o.t0);
        g.span.t1 = std::max(g.span.t1, o.t1);
    }
    // Sweep: every stretch between the end of the ops so far and the next op's begin is a gap (ops may overlap when
    // the pool runs them side by side; the union is what counts).
    int64_t covered = g.span.t0;
    for (const TimeSpan& o : ops) {
        if (o.t0 > covered) g.gaps.push_back({covered, o.t0});
        covered = std::max(covered, o.t1);
    }
    if (g.span.t1 > covered) g.gaps.push_back({covered, g.span.t1});
    for (const TimeSpan& s : g.gaps) g.gap_ns += s.dur();
    return g;
}

RangeStats range_stats(const std::vector<RangeOp>& ops, const std::vector<TimeSpan>& gaps, int64_t t0, int64_t t1) {
    RangeStats r;
    if (t1 < t0) std::swap(t0, t1);
    r.span_ns    = t1 - t0;
    auto overlap = [&](int64_t a, int64_t b) { return std::max<int64_t>(0, std::min(b, t1) - std::max(a, t0)); };
    for (const RangeOp& o : ops) {
        const int64_t d = overlap(o.t0, o.t1);
        if (d <= 0) continue;
        ++r.n_ops;
        r.ops_ns += d;
        if (size_t(o.op) < kOpClasses) r.by_class[size_t(o.op)] += d;
    }
    for (const TimeSpan& g : gaps) r.outside_ns += overlap(g.t0, g.t1);
    return r;
}

}  // namespace dyllm::app
