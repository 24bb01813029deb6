// Axis ticks for the studio's plots: "nice" 1-2-5 steps on a linear axis, decades on a log axis, and their labels.
#pragma once
#include <string>
#include <vector>

namespace dyllm::app {

// Ticks 0 <= t <= hi at a 1, 2 or 5 x 10^k spacing, at most max_ticks + 1 of them (0 included). hi <= 0: {0}.
std::vector<double> linear_ticks(double hi, int max_ticks);
// Ticks in [lo, hi] at a 1-2-5 spacing giving at most max_ticks + 1 of them (a zoomed time ruler). Bad input: {}.
std::vector<double> range_ticks(double lo, double hi, int max_ticks);
// Powers of ten in [lo, hi] (lo > 0); at least the decade at or below lo when none falls inside.
std::vector<double> decade_ticks(double lo, double hi);
// A tick value in milliseconds as a short label: "0", "0.5", "2", "10", "0.001".
std::string tick_label(double v);

}  // namespace dyllm::app
