// Nice axis ranges, tick labels and legend placement of the software plotter.
#include "app/model/plot_scale.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dyllm::app {

namespace {

// The 1, 2 or 5 x 10^k step at or above raw (raw > 0).
double nice_step(double raw) {
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0})
        if (m * mag >= raw * (1 - 1e-12)) return m * mag;
    return 10.0 * mag;
}

}  // namespace

AxisRange nice_axis(double lo, double hi, int max_ticks) {
    if (!std::isfinite(lo) || !std::isfinite(hi) || hi < lo) {
        lo = 0;
        hi = 1;
    }
    if (max_ticks < 1) max_ticks = 1;
    if (hi == lo) {
        // A flat series: one unit around it at its own magnitude (0 -> [0, 1]).
        const double pad = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
        lo               = lo == 0 ? 0 : lo - pad;
        hi               = hi + pad;
    }
    AxisRange r;
    // The step that fits the raw span may leave more than max_ticks intervals once both ends are rounded outwards:
    // take the next nice step until it fits.
    double step = nice_step((hi - lo) / max_ticks);
    for (int guard = 0; guard < 8; ++guard) {
        const double a = std::floor(lo / step + 1e-9), b = std::ceil(hi / step - 1e-9);
        if (b - a <= max_ticks) break;
        step = nice_step(step * 1.0001);
    }
    const double a = std::floor(lo / step + 1e-9), b = std::ceil(hi / step - 1e-9);
    r.step = step;
    r.lo   = a * step;
    r.hi   = b * step;
    // i * step, not a running sum, so labels do not drift (0.30000000000000004).
    for (double i = a; i <= b + 0.5; i += 1) r.ticks.push_back(std::abs(i) < 1e-12 ? 0.0 : i * step);
    return r;
}

std::string axis_tick_label(double v, double step) {
    char         buf[48];
    const double a = std::abs(v);
    if (v == 0 || std::abs(v) < step * 1e-6) return "0";
    if (a >= 1e6 || a < 1e-3) {
        std::snprintf(buf, sizeof buf, "%.3g", v);
        return buf;
    }
    // Decimals: enough to tell ticks apart at this step (0.05 -> 2, 0.2 -> 1, 5 -> 0).
    const int decimals = step >= 1 ? 0 : std::min(6, int(std::ceil(-std::log10(step) - 1e-9)));
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

Corner legend_corner(const std::vector<double>& px, const std::vector<double>& py, double x0, double y0, double x1,
                     double y1, double w, double h) {
    const Corner order[] = {Corner::TopRight, Corner::TopLeft, Corner::BottomRight, Corner::BottomLeft};
    Corner       best    = Corner::TopRight;
    size_t       fewest  = size_t(-1);
    for (Corner c : order) {
        const bool   right = c == Corner::TopRight || c == Corner::BottomRight;
        const bool   top   = c == Corner::TopRight || c == Corner::TopLeft;
        const double bx0 = right ? x1 - w : x0, by0 = top ? y0 : y1 - h;
        size_t       n = 0;
        for (size_t i = 0; i < px.size() && i < py.size(); ++i)
            n += px[i] >= bx0 && px[i] <= bx0 + w && py[i] >= by0 && py[i] <= by0 + h;
        if (n < fewest) {
            fewest = n;
            best   = c;
        }
    }
    return best;
}

}  // namespace dyllm::app
