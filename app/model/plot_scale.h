// The software plotter's pure geometry: nice axis ranges with 1-2-5 ticks, data-to-pixel scales, tick labels, the
// slots of a categorical axis and the legend corner that hides the fewest points. No pixels here (unit-tested).
#pragma once
#include <string>
#include <vector>

namespace dyllm::app {

// An axis range widened to tick boundaries: lo and hi are ticks, ticks are step apart (1, 2 or 5 x 10^k).
struct AxisRange {
    double              lo = 0, hi = 1, step = 0.2;
    std::vector<double> ticks;
};

// The smallest [lo', hi'] containing [lo, hi] whose ends are multiples of a 1-2-5 step giving at most max_ticks
// intervals. lo == hi is widened around the value (a flat series still gets an axis); non-finite input or hi < lo
// gives [0, 1]. max_ticks < 1 is taken as 1.
AxisRange nice_axis(double lo, double hi, int max_ticks);

// A tick value as text with just the decimals its step needs ("0.25" for step 0.05, "1200" for step 200; 1e6 and
// above or below 1e-3 in exponent form "2e+06").
std::string axis_tick_label(double v, double step);

// Maps [d0, d1] linearly onto [p0, p1] (p1 < p0 for a y axis growing upwards). d0 == d1 maps everything to p0.
struct LinearScale {
    double d0 = 0, d1 = 1, p0 = 0, p1 = 1;
    double map(double v) const { return d1 == d0 ? p0 : p0 + (v - d0) * (p1 - p0) / (d1 - d0); }
};

// A categorical x axis of n slots over [p0, p1]: slot i is centred at centre(i); bars of group g of n_groups sit
// side by side inside 80% of the slot (bar_left, bar_width).
struct CategoryScale {
    int    n  = 1;
    double p0 = 0, p1 = 1;
    double slot() const { return (p1 - p0) / (n > 0 ? n : 1); }
    double centre(double i) const { return p0 + (i + 0.5) * slot(); }
    double bar_width(int n_groups) const { return 0.8 * slot() / (n_groups > 0 ? n_groups : 1); }
    double bar_left(double i, int g, int n_groups) const { return centre(i) - 0.4 * slot() + g * bar_width(n_groups); }
};

enum class Corner { TopRight, TopLeft, BottomRight, BottomLeft };

// The legend corner of a plot area (x0, y0)-(x1, y1) in pixels (y down) that covers the fewest of the points
// (px[i], py[i]) inside a box of w x h pixels placed there; ties keep the order TopRight, TopLeft, BottomRight,
// BottomLeft.
Corner legend_corner(const std::vector<double>& px, const std::vector<double>& py, double x0, double y0, double x1,
                     double y1, double w, double h);

}  // namespace dyllm::app
