// One op's duration samples and their log-binned histogram (app/model/duration_histogram.h).
#include "app/model/duration_histogram.h"

#include <algorithm>
#include <cmath>

#include "app/model/op_preempt.h"

namespace dyllm::app {

std::vector<double> op_durations(const RunHistory& h, int lo, int hi, OpName name, int layer, bool exclude_preempted,
                                 std::vector<bool>* preempted) {
    std::vector<double> out;
    const int           n_embd = run_n_embd(h);
    lo                         = std::max(lo, 1);
    hi                         = std::min(hi, h.step_count());
    for (int k = lo; k <= hi; ++k) {
        const StepData* sd = h.step(k);
        if (!sd) continue;
        if (name == OpName::Count) {  // outside ops: as op_stats counts them
            if (sd->ended) {
                out.push_back(sd->outside_ops_seconds());
                if (preempted) preempted->push_back(false);
            }
            continue;
        }
        const auto names = name_ops(sd->ops, n_embd);
        for (size_t i = 0; i < sd->ops.size(); ++i) {
            const OpTiming& o = sd->ops[i];
            if (names[i].name != name || (layer != -2 && o.layer != layer)) continue;
            const bool pre = op_preempted(o);
            if (pre && exclude_preempted) continue;
            out.push_back(double(o.dur_ns) * 1e-9);
            if (preempted) preempted->push_back(pre);
        }
    }
    return out;
}

double DurationHistogram::bin_lo(int b) const {
    if (counts.empty() || !(lo_s > 0) || hi_s <= lo_s) return lo_s;
    return lo_s * std::pow(hi_s / lo_s, double(b) / double(counts.size()));
}

int DurationHistogram::bin_of(double v) const {
    const int n = int(counts.size());
    if (n <= 1 || !(v > 0) || !(lo_s > 0) || hi_s <= lo_s) return 0;
    const int b = int(std::floor(std::log(v / lo_s) / std::log(hi_s / lo_s) * n));
    return std::clamp(b, 0, n - 1);  // the largest sample lands on the top edge: the last bin
}

DurationHistogram duration_histogram(std::span<const double> samples, int bins) {
    DurationHistogram h;
    if (samples.empty() || bins <= 0) return h;
    double lo = INFINITY, hi = 0;
    for (double v : samples)
        if (v > 0) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    h.total = int(samples.size());
    if (!(hi > 0)) {  // no positive sample: everything in one bin at 0
        h.counts.assign(1, h.total);
        return h;
    }
    h.lo_s = lo;
    h.hi_s = hi;
    if (hi <= lo) {
        h.counts.assign(1, h.total);
        return h;
    }
    h.counts.assign(size_t(bins), 0);
    for (double v : samples) h.counts[size_t(h.bin_of(v))]++;
    return h;
}

}  // namespace dyllm::app
