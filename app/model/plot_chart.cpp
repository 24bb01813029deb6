// Chart rendering of the software plotter: layout of panels, axes, series, reference lines and legends.
#include "app/model/plot_chart.h"

#include <algorithm>
#include <cmath>

#include "app/model/plot_scale.h"

namespace dyllm::app {

namespace {

constexpr Rgba kInk{30, 30, 30, 255};
constexpr Rgba kGrid{225, 225, 225, 255};
constexpr Rgba kAxis{60, 60, 60, 255};
constexpr int  kFont   = 2;  // stb_easy_font scale: about 14 px capitals, readable at 900x560
constexpr int  kYTicks = 6;  // at most this many intervals on a y axis

bool finite(double v) {
    return std::isfinite(v);
}

void draw_panel(Canvas& cv, const Panel& p, double left, double top, double right, double bottom) {
    const int th = Canvas::text_height(kFont);
    // Room for the title above, tick labels and the x label below, tick labels and the y label to the left.
    double     y0 = top + (p.title.empty() ? 8 : th + 10), y1 = bottom - th * (p.x_label.empty() ? 1 : 2) - 14;
    const bool categorical = !p.x_categories.empty();
    bool       has_bars    = false;

    // Data ranges.
    double ylo = INFINITY, yhi = -INFINITY, xlo = INFINITY, xhi = -INFINITY;
    for (const Series& s : p.series) {
        has_bars |= s.style == SeriesStyle::Bars;
        for (size_t i = 0; i < s.y.size() && i < s.x.size(); ++i) {
            if (!finite(s.y[i]) || !finite(s.x[i])) continue;
            ylo = std::min(ylo, s.y[i]);
            yhi = std::max(yhi, s.y[i]);
            xlo = std::min(xlo, s.x[i]);
            xhi = std::max(xhi, s.x[i]);
        }
    }
    for (const RefLine& h : p.hlines) {
        ylo = std::min(ylo, h.value);
        yhi = std::max(yhi, h.value);
    }
    if (has_bars) {
        ylo = std::min(ylo, 0.0);
        yhi = std::max(yhi, 0.0);
    }
    if (p.y_min) ylo = *p.y_min;
    if (p.y_max) yhi = *p.y_max;
    if (!(ylo <= yhi)) {
        ylo = 0;
        yhi = 1;
    }
    // Headroom for the legend above the data when the top end is free to move (a quarter of the span).
    const bool named = std::any_of(p.series.begin(), p.series.end(), [](const Series& s) { return !s.name.empty(); });
    if (named && !p.y_max) yhi += 0.25 * (yhi - ylo);
    AxisRange ya = nice_axis(ylo, yhi, kYTicks);
    if (p.y_min) ya.lo = *p.y_min;
    if (p.y_max) ya.hi = *p.y_max;
    std::erase_if(ya.ticks, [&](double t) { return t < ya.lo - 1e-9 * ya.step || t > ya.hi + 1e-9 * ya.step; });

    int label_w = 0;
    for (double t : ya.ticks) label_w = std::max(label_w, Canvas::text_width(axis_tick_label(t, ya.step), kFont));
    const double      x0 = left + (p.y_label.empty() ? 0 : th + 6) + label_w + 12, x1 = right - 12;
    const LinearScale ys{ya.lo, ya.hi, y1, y0};

    // x mapping: category slots or a nice numeric axis.
    AxisRange     xa;
    LinearScale   xs{};
    CategoryScale cs{int(p.x_categories.size()), x0, x1};
    if (!categorical) {
        if (!(xlo <= xhi)) {
            xlo = 0;
            xhi = 1;
        }
        xa = nice_axis(xlo, xhi, std::max(2, int((x1 - x0) / 90)));
        xs = {xa.lo, xa.hi, x0, x1};
    }
    auto map_x = [&](double v) { return categorical ? cs.centre(v) : xs.map(v); };

    // Title, grid, axes, ticks.
    if (!p.title.empty())
        cv.text((left + right) / 2 - Canvas::text_width(p.title, kFont) / 2.0, top + 2, p.title, kInk, kFont);
    for (double t : ya.ticks) {
        const double y = ys.map(t);
        cv.line(x0, y, x1, y, kGrid, 1);
        const std::string l = axis_tick_label(t, ya.step);
        cv.text(x0 - 8 - Canvas::text_width(l, kFont), y - th * 0.35, l, kInk, kFont);
    }
    if (categorical) {
        for (size_t i = 0; i < p.x_categories.size(); ++i) {
            const double x = cs.centre(double(i));
            if (p.x_categories[i].empty()) continue;
            cv.line(x, y1, x, y1 + 5, kAxis, 1);
            cv.text(x - Canvas::text_width(p.x_categories[i], kFont) / 2.0, y1 + 8, p.x_categories[i], kInk, kFont);
        }
    } else {
        for (double t : xa.ticks) {
            const double      x = xs.map(t);
            const std::string l = axis_tick_label(t, xa.step);
            cv.line(x, y0, x, y1, kGrid, 1);
            cv.line(x, y1, x, y1 + 5, kAxis, 1);
            cv.text(x - Canvas::text_width(l, kFont) / 2.0, y1 + 8, l, kInk, kFont);
        }
    }
    cv.line(x0, y1, x1, y1, kAxis, 1.5);
    cv.line(x0, y0, x0, y1, kAxis, 1.5);
    if (!p.x_label.empty())
        cv.text((x0 + x1) / 2 - Canvas::text_width(p.x_label, kFont) / 2.0, y1 + th + 14, p.x_label, kInk, kFont);
    if (!p.y_label.empty())
        cv.text(left + 2, (y0 + y1) / 2 + Canvas::text_width(p.y_label, kFont) / 2.0, p.y_label, kInk, kFont, true);

    // Reference lines.
    for (const RefLine& h : p.hlines)
        if (h.value >= ya.lo && h.value <= ya.hi)
            cv.line(x0, ys.map(h.value), x1, ys.map(h.value), h.color, 2, h.dashed ? 7 : 0);
    for (const RefLine& v : p.vlines) {
        const double x = map_x(v.value);
        cv.line(x, y0, x, y1, v.color, 1.5, v.dashed ? 6 : 0);
        if (!v.name.empty()) cv.text(x + 4, y0 + 0.4 * (y1 - y0), v.name, v.color, kFont);
    }

    // Series: bars first (under the lines), then lines, then markers and point labels.
    std::vector<double> occ_x, occ_y;  // what the legend should avoid
    auto                occupy = [&](double x, double y) {
        occ_x.push_back(x);
        occ_y.push_back(y);
    };
    int n_bars = 0;
    for (const Series& s : p.series) n_bars += s.style == SeriesStyle::Bars;
    int bar_group = 0;
    for (const Series& s : p.series) {
        if (s.style != SeriesStyle::Bars) continue;
        for (size_t i = 0; i < s.y.size() && i < s.x.size(); ++i) {
            if (!finite(s.y[i])) continue;
            const double bx   = categorical ? cs.bar_left(s.x[i], bar_group, n_bars) : xs.map(s.x[i]) - 6;
            const double bw   = categorical ? cs.bar_width(n_bars) : 12;
            const double base = ys.map(std::clamp(0.0, ya.lo, ya.hi)), top_y = ys.map(std::clamp(s.y[i], ya.lo, ya.hi));
            cv.fill_rect(bx + 1, std::min(base, top_y), bx + bw - 1, std::max(base, top_y), s.color);
            for (double f : {0.0, 0.5, 1.0}) occupy(bx + bw / 2, top_y + f * (base - top_y));
        }
        ++bar_group;
    }
    for (const Series& s : p.series) {
        if (s.style != SeriesStyle::Line) continue;
        double px = NAN, py = NAN;
        for (size_t i = 0; i < s.y.size() && i < s.x.size(); ++i) {
            if (!finite(s.y[i])) {
                px = py = NAN;
                continue;
            }
            const double x = map_x(s.x[i]), y = ys.map(std::clamp(s.y[i], ya.lo, ya.hi));
            if (finite(px)) {
                cv.line(px, py, x, y, s.color, 2.5, s.dashed ? 8 : 0);
                for (int k = 1; k < 8; ++k) occupy(px + (x - px) * k / 8, py + (y - py) * k / 8);
            }
            px = x;
            py = y;
        }
    }
    for (const Series& s : p.series) {
        if (s.style == SeriesStyle::Bars) continue;
        for (size_t i = 0; i < s.y.size() && i < s.x.size(); ++i) {
            if (!finite(s.y[i])) continue;
            const double x = map_x(s.x[i]), y = ys.map(std::clamp(s.y[i], ya.lo, ya.hi));
            cv.marker(x, y, s.marker, 11, s.color);
            occupy(x, y);
            if (i < s.point_labels.size() && !s.point_labels[i].empty()) {
                const double lx = x + 7, ly = y - th - 2;
                cv.text(lx, ly, s.point_labels[i], s.color, kFont);
                occupy(lx + Canvas::text_width(s.point_labels[i], kFont) / 2.0, ly);
            }
        }
    }
    for (const RefLine& h : p.hlines)
        for (int k = 0; k <= 16; ++k) occupy(x0 + (x1 - x0) * k / 16, ys.map(h.value));
    for (const RefLine& v : p.vlines) {
        const double x = map_x(v.value), w = Canvas::text_width(v.name, kFont);
        for (int k = 0; k <= 16; ++k) occupy(x, y0 + (y1 - y0) * k / 16);
        for (int k = 0; k <= 8 && w > 0; ++k) occupy(x + 4 + w * k / 8, y0 + 0.4 * (y1 - y0) + th / 2.0);
    }

    // Legend: one row per named series and horizontal reference line, in the emptiest corner.
    struct Entry {
        std::string name;
        Rgba        color;
        SeriesStyle style;
        MarkerShape marker;
        bool        dashed;
        bool        with_marker;  // series points have markers; reference lines do not
    };
    std::vector<Entry> entries;
    for (const Series& s : p.series)
        if (!s.name.empty()) entries.push_back({s.name, s.color, s.style, s.marker, s.dashed, true});
    for (const RefLine& h : p.hlines)
        if (!h.name.empty())
            entries.push_back({h.name, h.color, SeriesStyle::Line, MarkerShape::Circle, h.dashed, false});
    if (entries.empty()) return;
    int name_w = 0;
    for (const Entry& e : entries) name_w = std::max(name_w, Canvas::text_width(e.name, kFont));
    const double row = th + 6, lw = 36 + 8 + name_w + 16, lh = row * double(entries.size()) + 10;
    const Corner c  = legend_corner(occ_x, occ_y, x0 + 6, y0 + 6, x1 - 6, y1 - 6, lw, lh);
    const double lx = (c == Corner::TopRight || c == Corner::BottomRight) ? x1 - 6 - lw : x0 + 6;
    const double ly = (c == Corner::TopRight || c == Corner::TopLeft) ? y0 + 6 : y1 - 6 - lh;
    cv.fill_rect(lx, ly, lx + lw, ly + lh, {255, 255, 255, 230});
    cv.rect_outline(lx, ly, lx + lw, ly + lh, {170, 170, 170, 255}, 1);
    for (size_t i = 0; i < entries.size(); ++i) {
        const Entry& e  = entries[i];
        const double cy = ly + 5 + row * double(i) + row / 2, sx = lx + 8;
        if (e.style == SeriesStyle::Bars) {
            cv.fill_rect(sx + 6, cy - 6, sx + 30, cy + 6, e.color);
        } else {
            if (e.style == SeriesStyle::Line) cv.line(sx, cy, sx + 36, cy, e.color, 2.5, e.dashed ? 7 : 0);
            if (e.with_marker) cv.marker(sx + 18, cy, e.marker, 10, e.color);
        }
        cv.text(sx + 44, cy - th * 0.35, e.name, kInk, kFont);
    }
}

}  // namespace

Rgba palette_color(int i) {
    static constexpr Rgba kColors[] = {
        {31, 119, 180, 255}, {255, 127, 14, 255},  {44, 160, 44, 255},   {214, 39, 40, 255},  {148, 103, 189, 255},
        {140, 86, 75, 255},  {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255}};
    constexpr int n = int(sizeof kColors / sizeof kColors[0]);
    return kColors[((i % n) + n) % n];
}

MarkerShape palette_marker(int i) {
    static constexpr MarkerShape kShapes[] = {MarkerShape::Circle, MarkerShape::Square, MarkerShape::Diamond,
                                              MarkerShape::Triangle};
    return kShapes[((i % 4) + 4) % 4];
}

Canvas render_figure(const Figure& f) {
    Canvas    cv(f.width, f.height);
    const int th  = Canvas::text_height(kFont);
    double    top = 8;
    if (!f.title.empty()) {
        cv.text(f.width / 2.0 - Canvas::text_width(f.title, kFont) / 2.0, top, f.title, kInk, kFont);
        top += th + 10;
    }
    const size_t n = std::max<size_t>(1, f.panels.size());
    const double w = double(f.width - 16) / double(n);
    for (size_t i = 0; i < f.panels.size(); ++i)
        draw_panel(cv, f.panels[i], 8 + w * double(i), top, 8 + w * double(i + 1) - (i + 1 < n ? 16 : 0), f.height - 6);
    return cv;
}

}  // namespace dyllm::app
