// Speed-up of a repeated comparison: per pair, then median and range (app/model/compare_reps.h).
#include "app/model/compare_reps.h"

#include <algorithm>

#include "app/model/run_compare.h"

namespace dyllm::app {

void median_range(std::vector<double> v, double* median, double* lo, double* hi) {
    *median = *lo = *hi = 0;
    if (v.empty()) return;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    *median        = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    *lo            = v.front();
    *hi            = v.back();
}

RepeatedSpeedup repeated_speedup(const RunList& runs, const std::vector<std::pair<std::string, std::string>>& pairs) {
    RepeatedSpeedup r;
    r.pairs = int(pairs.size());
    for (const auto& [la, lb] : pairs) {
        const int ia = runs.index_of(la), ib = runs.index_of(lb);
        if (ia < 0 || ib < 0) continue;
        const RunHistory& a = runs[size_t(ia)].history;
        const RunHistory& b = runs[size_t(ib)].history;
        // The same rule as a single comparison: only two runs that ended normally give a speed-up.
        if (!run_state_note(a).empty() || !run_state_note(b).empty()) continue;
        const double ta = a.summary().tokens_per_s, tb = b.summary().tokens_per_s;
        if (!(ta > 0) || !(tb > 0)) continue;
        r.speedups.push_back(tb / ta);
    }
    r.counted = int(r.speedups.size());
    median_range(r.speedups, &r.median, &r.lo, &r.hi);
    return r;
}

}  // namespace dyllm::app
