// A comparison repeated: the speed-up B/A of each pair of runs and their median and range, so one noisy pair (a busy
// machine, a preempted step) cannot pass for the speed-up.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "app/model/run_list.h"

namespace dyllm::app {

struct RepeatedSpeedup {
    int                 pairs   = 0;                 // pairs asked for (labels given)
    int                 counted = 0;                 // pairs with a valid speed-up (both runs ended normally)
    std::vector<double> speedups;                    // one per counted pair, in pair order
    double              median = 0, lo = 0, hi = 0;  // of speedups; 0 when none
};

// The engine tokens/s of B over A for each (label A, label B) pair that is in `runs` and complete.
RepeatedSpeedup repeated_speedup(const RunList& runs, const std::vector<std::pair<std::string, std::string>>& pairs);

// Median (the mean of the middle two for an even count), minimum and maximum of v; all 0 for an empty v.
void median_range(std::vector<double> v, double* median, double* lo, double* hi);

}  // namespace dyllm::app
