// The report's software plotter and figure tables without a model: nice axes and tick labels, scales, legend
// placement, canvas primitives and the PNG file, the saliency probe's pooling, the figures' CSV columns, tau lists.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "app/model/plot_canvas.h"
#include "app/model/plot_chart.h"
#include "app/model/plot_scale.h"
#include "app/model/report_figures.h"
#include "app/model/report_probe.h"
#include "engine/errors.h"
#include "support/tiny_models.h"

using namespace dyllm;
using namespace dyllm::app;

TEST_CASE("nice_axis widens a range to 1-2-5 ticks within the tick budget", "[report][plot]") {
    const AxisRange a = nice_axis(0.013, 0.87, 6);
    CHECK(a.step == Approx(0.2));
    CHECK(a.lo == 0.0);
    CHECK(a.hi == Approx(1.0));
    REQUIRE(a.ticks.size() == 6);
    CHECK(a.ticks[3] == Approx(0.6));
    CHECK(a.ticks.back() == a.hi);  // exact product i * step, so the last tick is the end itself

    // Outward rounding can add intervals: 0.975..0.9999 at a 0.005 step would need 6; the budget of 4 takes 0.01.
    const AxisRange b = nice_axis(0.975, 0.9999, 4);
    CHECK(b.lo <= 0.975);
    CHECK(b.hi >= 0.9999);
    CHECK(int(b.ticks.size()) - 1 <= 4);
    CHECK(b.step == Approx(0.01));

    const AxisRange neg = nice_axis(-0.06, 1, 6);
    CHECK(neg.lo == Approx(-0.2));
    CHECK(neg.hi == Approx(1.0));
    CHECK(std::count(neg.ticks.begin(), neg.ticks.end(), 0.0) == 1);  // zero is exactly 0, not -1e-17

    const AxisRange big = nice_axis(0, 1137, 6);
    CHECK(big.step == 200);
    CHECK(big.hi == 1200);
}

TEST_CASE("nice_axis handles flat, reversed and non-finite ranges", "[report][plot]") {
    const AxisRange flat = nice_axis(0.5, 0.5, 5);
    CHECK(flat.lo < 0.5);
    CHECK(flat.hi > 0.5);
    const AxisRange zero = nice_axis(0, 0, 5);
    CHECK(zero.lo == 0);
    CHECK(zero.hi == Approx(1));
    const AxisRange bad = nice_axis(NAN, 3, 5);
    CHECK(bad.lo == 0);
    CHECK(bad.hi == Approx(1));
    CHECK(nice_axis(2, 1, 5).hi == Approx(1));
    CHECK(!nice_axis(0, 1, 0).ticks.empty());
}

TEST_CASE("tick labels carry the decimals their step needs", "[report][plot]") {
    CHECK(axis_tick_label(0.25, 0.05) == "0.25");
    CHECK(axis_tick_label(0.4, 0.2) == "0.4");
    CHECK(axis_tick_label(1200, 200) == "1200");
    CHECK(axis_tick_label(0.995, 0.005) == "0.995");
    CHECK(axis_tick_label(1e-17, 0.1) == "0");
    CHECK(axis_tick_label(2e6, 1e6) == "2e+06");
}

TEST_CASE("linear and categorical scales map data to pixels", "[report][plot]") {
    const LinearScale y{0, 1, 500, 100};  // y grows upwards on screen
    CHECK(y.map(0) == 500);
    CHECK(y.map(1) == 100);
    CHECK(y.map(0.25) == 400);
    CHECK(LinearScale{2, 2, 7, 9}.map(5) == 7);
    const CategoryScale c{4, 100, 500};
    CHECK(c.centre(0) == 150);
    CHECK(c.centre(3) == 450);
    // Two bar groups fill 80% of a slot, side by side and centred on it.
    CHECK(c.bar_width(2) == Approx(40));
    CHECK(c.bar_left(1, 0, 2) == Approx(210));
    CHECK(c.bar_left(1, 1, 2) + c.bar_width(2) == Approx(290));
}

TEST_CASE("the legend goes to the corner with the fewest points", "[report][plot]") {
    // Points crowd the top right and bottom left: of the free corners, top left comes first in the tie order.
    const std::vector<double> px{90, 95, 10, 12}, py{5, 8, 95, 90};
    CHECK(legend_corner(px, py, 0, 0, 100, 100, 30, 20) == Corner::TopLeft);
    CHECK(legend_corner({}, {}, 0, 0, 100, 100, 30, 20) == Corner::TopRight);
    const std::vector<double> qx{5, 95, 90}, qy{5, 5, 95};
    CHECK(legend_corner(qx, qy, 0, 0, 100, 100, 30, 20) == Corner::BottomLeft);
}

TEST_CASE("canvas primitives cover the pixels they should", "[report][plot]") {
    Canvas c(40, 30);
    CHECK(c.pixel(5, 5).r == 255);
    CHECK(c.pixel(-1, 0).a == 0);
    c.fill_rect(10, 10, 20, 15, {0, 0, 255, 255});
    CHECK(c.pixel(10, 10).b == 255);
    CHECK(c.pixel(10, 10).r == 0);
    CHECK(c.pixel(20, 10).r == 255);  // the right edge is exclusive
    c.line(0, 25, 39, 25, {255, 0, 0, 255}, 3);
    CHECK(c.pixel(20, 25).g == 0);    // on the line
    CHECK(c.pixel(20, 20).g == 255);  // well off it
    c.marker(30, 5, MarkerShape::Circle, 8, {0, 0, 0, 255});
    CHECK(c.pixel(30, 5).r == 0);
    CHECK(c.pixel(37, 5).r == 255);
    const Rgba before = c.pixel(2, 2);
    c.text(2, 2, "8", {0, 0, 0, 255}, 1);
    int inked = 0;
    for (int y = 0; y < 12; ++y)
        for (int x = 0; x < 10; ++x) inked += c.pixel(x, y).r < 128;
    CHECK(before.r == 255);
    CHECK(inked >= 10);  // the 8's seven segments
    CHECK(Canvas::text_width("abc", 2) == 2 * Canvas::text_width("abc", 1));
    CHECK(Canvas::text_width("0.985", 2) > Canvas::text_width("0.98", 2));
}

TEST_CASE("a rendered figure is a PNG of the requested size", "[report][plot]") {
    Figure f;
    f.title = "t";
    Panel p;
    p.x_categories = {"a", "b"};
    Series s;
    s.name = "s";
    s.x    = {0, 1};
    s.y    = {0.2, NAN};  // NaN points are skipped, not drawn at the axis
    p.series.push_back(s);
    p.hlines.push_back({0.5, "ref"});
    f.panels       = {p, p};
    const Canvas c = render_figure(f);
    CHECK(c.width() == 900);
    CHECK(c.height() == 560);
    const auto  dir = test::make_temp_dir("report-plot");
    const auto  png = (dir / "f.png").string();
    std::string err;
    REQUIRE(c.write_png(png, &err));
    std::ifstream              in(png, std::ios::binary);
    std::vector<unsigned char> head(24);
    in.read(reinterpret_cast<char*>(head.data()), 24);
    CHECK(head[1] == 'P');
    CHECK(head[2] == 'N');
    CHECK(head[3] == 'G');
    // IHDR: big-endian width and height at bytes 16 and 20.
    CHECK((head[18] << 8 | head[19]) == 900);
    CHECK((head[22] << 8 | head[23]) == 560);
    CHECK_FALSE(c.write_png((dir / "no" / "such" / "dir.png").string(), &err));
    CHECK(err.find("dir.png") != std::string::npos);
}

TEST_CASE("the saliency probe pools sparse steps per layer", "[report]") {
    SaliencyProbe probe;
    LayerSaliency e;
    e.layer     = 1;
    e.n_rows    = 4;
    e.n_salient = 1;
    e.tau       = 0.99f;
    e.hist[0]   = 3;
    e.hist[12]  = 1;
    probe.on_step_begin({1, StepKind::Full, 0.99f, 4, 0});
    probe.on_layer_saliency(e);  // a dense step: ignored
    CHECK(probe.layers().empty());
    probe.on_step_begin({5, StepKind::SparseResponse, 0.99f, 4, 0});
    probe.on_layer_saliency(e);
    e.n_salient = 3;
    const std::vector<float> drift{NAN, 0.5f, 0.999f, 0.98f};
    e.drift       = drift;
    e.drift_count = 3;
    probe.on_layer_saliency(e);
    REQUIRE(probe.layers().size() == 2);
    const LayerProbe& l = probe.layers()[1];
    CHECK(l.rows == 8);
    CHECK(l.hist[0] == 6);
    CHECK(l.lsal_mean() == Approx(0.5));  // (1/4 + 3/4) / 2
    CHECK(l.drift_rows == 3);
    CHECK(l.drift_below_tau == 2);
    CHECK(l.drift_min == Approx(0.5));
    CHECK(l.drift_mean() == Approx((0.5 + 0.999 + 0.98) / 3));
    CHECK(std::isnan(probe.layers()[0].lsal_mean()));
}

namespace {

std::vector<std::string> csv_lines(const CsvTable& t) {
    std::ostringstream os;
    write_csv(os, t);
    std::vector<std::string> lines;
    std::istringstream       is(os.str());
    for (std::string l; std::getline(is, l);) lines.push_back(l);
    return lines;
}

}  // namespace

TEST_CASE("each figure's CSV holds the numbers of its chart", "[report]") {
    ProbeRun run{"authors", 0.99f, std::vector<LayerProbe>(2)};
    run.layers[0].hist[1]         = 3;
    run.layers[0].hist[15]        = 1;
    run.layers[0].rows            = 4;
    run.layers[1].lsal_sum        = 0.5;
    run.layers[1].lsal_samples    = 2;
    run.layers[1].drift_rows      = 2;
    run.layers[1].drift_sum       = 1.5;
    run.layers[1].drift_min       = 0.6;
    run.layers[1].drift_below_tau = 1;

    const ReportFigure cos = cosine_by_layer_figure(run, "m");
    CHECK(cos.name == "cosine_by_layer");
    CHECK(cos.table.rows.size() == size_t(2 * kCosineBins));
    CHECK(csv_lines(cos.table)[0] == "layer,bin,one_minus_cos_lo,one_minus_cos_hi,rows,share");
    CHECK(cos.table.rows[1][4] == "3");
    CHECK(cos.table.rows[1][5] == "0.75");
    CHECK(cos.table.rows[1][2] == "1e-07");  // bin 1 starts at 1 - cos = 1e-7
    REQUIRE(cos.figure.panels.size() == 1);
    CHECK(cos.figure.panels[0].series[0].y[1] == Approx(75));  // the chart shows the same share in percent
    REQUIRE(cos.figure.panels[0].vlines.size() == 1);
    CHECK(cos.figure.panels[0].vlines[0].value == Approx(10.5));  // 1 - tau = 1e-2 is bin 11's left edge

    const ReportFigure lsal = lsal_by_layer_figure({run}, "m");
    CHECK(csv_lines(lsal.table)[0] == "update,tau,layer,lsal_mean,samples");
    CHECK(lsal.table.rows[1][3] == "0.25");
    CHECK(lsal.table.rows[0][3] == "");  // no samples: an empty field, not "nan"

    const ReportFigure drift = drift_by_layer_figure({run, run}, "m");
    CHECK(csv_lines(drift.table)[0] == "update,tau,layer,approx_rows,min_cos,mean_cos,share_below_tau");
    CHECK(drift.table.rows.size() == 4);
    CHECK(drift.table.rows[1][5] == "0.75");
    CHECK(drift.table.rows[1][6] == "0.5");
    CHECK(drift.figure.panels.size() == 2);

    const std::vector<AccuracyPoint> acc{
        {"original", NAN, 10, 7, 1.0, 50}, {"dyllm", 0.99f, 10, 5, 0.3, 80}, {"dyllm", 0.995f, 10, 6, 0.35, 70}};
    const ReportFigure a = accuracy_vs_tau_figure(acc, "m", 4, 10);
    CHECK(csv_lines(a.table)[0] == "variant,tau,n,correct,accuracy,flops_vs_dense,tokens_per_s");
    CHECK(a.table.rows[0][1] == "");
    CHECK(a.table.rows[1][4] == "0.5");
    CHECK(a.figure.panels[0].x_categories == std::vector<std::string>{"0.99", "0.995"});
    CHECK(a.figure.panels[0].hlines[0].value == Approx(0.7));
    CHECK(a.figure.panels[1].series[0].y == std::vector<double>{0.3, 0.35});

    const std::vector<ThroughputPoint> thr{{"dyllm", 1, 64, 100, 2e7, 0.3}, {"fast-dual", 1, 64, 150, 1e7, 0.2}};
    const ReportFigure                 t = throughput_vs_nu_figure(thr, "m");
    CHECK(csv_lines(t.table)[0] == "method,n_u,steps,tokens_per_s,flops_per_token,flops_vs_dense");
    CHECK(t.table.rows[0][4] == "2e+07");
    CHECK(t.figure.panels[1].series[0].y[0] == Approx(20));  // MFLOP per token
}

TEST_CASE("CSV fields with commas or quotes are quoted", "[report]") {
    const auto lines = csv_lines({{"a", "b"}, {{"x,y", "say \"hi\""}}});
    CHECK(lines[1] == "\"x,y\",\"say \"\"hi\"\"\"");
    CHECK(csv_number(0.1) == "0.1");
    CHECK(csv_number(1.0 / 3) == "0.3333333333333333");
}

TEST_CASE("tau lists: numbers in (0, 1], no empty items or duplicates", "[report]") {
    CHECK(parse_tau_list("--taus", "0.95, 0.99,1") == std::vector<float>{0.95f, 0.99f, 1.0f});
    auto message = [](const std::string& text) {
        try {
            parse_tau_list("--taus", text);
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(message("0.9,abc") == "--taus: 'abc' is not a number");
    CHECK(message("0.9,,0.99") == "--taus: empty item in '0.9,,0.99' (expected e.g. 0.95,0.99)");
    CHECK(message("") == "--taus: empty item in '' (expected e.g. 0.95,0.99)");
    CHECK(message("1.5").find("outside (0, 1]") != std::string::npos);
    CHECK(message("0").find("outside (0, 1]") != std::string::npos);
    CHECK(message("0.99,0.99") == "--taus: tau 0.99 is given twice");
    CHECK(message("nan") == "--taus: 'nan' is not a number");
}
