// The software plotter's charts: a figure of one or more panels side by side, each with a title, axes with ticks and
// labels, line / bar / marker series, reference lines and a legend, rendered onto a Canvas.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "app/model/plot_canvas.h"

namespace dyllm::app {

enum class SeriesStyle { Line, Bars, Markers };

struct Series {
    std::string              name;  // legend entry ("" = none)
    std::vector<double>      x, y;  // x: category index on a categorical axis; NaN y values are skipped
    Rgba                     color{31, 119, 180, 255};
    SeriesStyle              style  = SeriesStyle::Line;
    MarkerShape              marker = MarkerShape::Circle;
    bool                     dashed = false;
    std::vector<std::string> point_labels;  // optional text drawn next to each point (e.g. FLOPs vs dense)
    void                     add(double px, double py) {
                            x.push_back(px);
                            y.push_back(py);
    }
};

// A horizontal (y = value) or vertical (x = value) reference line across the plot area.
struct RefLine {
    double      value = 0;
    std::string name;  // legend entry for horizontal lines, a label at the top for vertical ones
    Rgba        color{90, 90, 90, 255};
    bool        dashed = true;
};

struct Panel {
    std::string              title, x_label, y_label;
    std::vector<std::string> x_categories;  // non-empty: categorical x axis (one slot per entry; "" = no label)
    std::optional<double>    y_min, y_max;  // forced ends of the y axis (else from the data, 0 included for bars)
    std::vector<Series>      series;
    std::vector<RefLine>     hlines, vlines;
};

struct Figure {
    std::string        title;
    std::vector<Panel> panels;
    int                width = 900, height = 560;
};

// Draws the figure: panels share the width equally; the figure title (if any) sits above them.
Canvas render_figure(const Figure& f);

// The colours and markers the report cycles through for its series (colour-blind-safe Tableau-like palette).
Rgba        palette_color(int i);
MarkerShape palette_marker(int i);

}  // namespace dyllm::app
