// Axis tick placement (1-2-5 linear steps, log decades) and labels.
#include "app/model/axis_ticks.h"

#include <cmath>

#include "instrumentation/number_text.h"

namespace dyllm::app {

namespace {

// The 1, 2 or 5 x 10^k step at or above raw.
double nice_step(double raw) {
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0})
        if (m * mag >= raw) return m * mag;
    return 10.0 * mag;
}

}  // namespace

std::vector<double> linear_ticks(double hi, int max_ticks) {
    std::vector<double> t{0.0};
    if (!(hi > 0) || !std::isfinite(hi) || max_ticks < 1) return t;
    const double step = nice_step(hi / max_ticks);
    // i * step, not a running sum: no drift in the labels (0.30000000000000004).
    for (int i = 1; i * step <= hi * (1 + 1e-9); ++i) t.push_back(i * step);
    return t;
}

std::vector<double> range_ticks(double lo, double hi, int max_ticks) {
    std::vector<double> t;
    if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi) || max_ticks < 1) return t;
    const double step = nice_step((hi - lo) / max_ticks);
    for (double i = std::ceil(lo / step - 1e-9); i * step <= hi * (1 + 1e-12) + 1e-300; i += 1) t.push_back(i * step);
    return t;
}

std::vector<double> decade_ticks(double lo, double hi) {
    std::vector<double> t;
    if (!(lo > 0) || !(hi >= lo) || !std::isfinite(hi)) return t;
    const int e0 = int(std::ceil(std::log10(lo) - 1e-9)), e1 = int(std::floor(std::log10(hi) + 1e-9));
    for (int e = e0; e <= e1; ++e) t.push_back(std::pow(10.0, e));
    if (t.empty()) t.push_back(std::pow(10.0, std::floor(std::log10(lo))));
    return t;
}

std::string tick_label(double v) {
    return number_text(v, 3);
}

}  // namespace dyllm::app
