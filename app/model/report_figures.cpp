// `dyllm report`'s figures: the CSV table and the chart of each, built from the same numbers.
#include "app/model/report_figures.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "engine/errors.h"

namespace dyllm::app {

namespace {

std::string fmt(const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

std::string tau_text(double tau) {
    return fmt("%g", tau);
}

std::vector<std::string> layer_categories(size_t n) {
    std::vector<std::string> c;
    for (size_t l = 0; l < n; ++l) c.push_back(std::to_string(l));
    return c;
}

size_t max_layers(const std::vector<ProbeRun>& runs) {
    size_t n = 0;
    for (const auto& r : runs) n = std::max(n, r.layers.size());
    return n;
}

Series styled(std::string name, int i, SeriesStyle style = SeriesStyle::Line) {
    Series s;
    s.name   = std::move(name);
    s.color  = palette_color(i);
    s.marker = palette_marker(i);
    s.style  = style;
    return s;
}

}  // namespace

void write_csv(std::ostream& os, const CsvTable& t) {
    auto field = [&](const std::string& f) {
        if (f.find_first_of(",\"\n\r") == std::string::npos) return f;
        std::string q = "\"";
        for (char c : f) q += c == '"' ? std::string("\"\"") : std::string(1, c);
        return q + "\"";
    };
    auto line = [&](const std::vector<std::string>& r) {
        for (size_t i = 0; i < r.size(); ++i) os << (i ? "," : "") << field(r[i]);
        os << "\n";
    };
    line(t.header);
    for (const auto& r : t.rows) line(r);
}

std::string csv_number(double v) {
    if (std::isnan(v)) return "";
    char buf[32];
    for (int prec = 6; prec <= 17; ++prec) {  // shortest form that reads back as the same double
        std::snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
}

ReportFigure cosine_by_layer_figure(const ProbeRun& run, const std::string& model) {
    ReportFigure f;
    f.name         = "cosine_by_layer";
    f.table.header = {"layer", "bin", "one_minus_cos_lo", "one_minus_cos_hi", "rows", "share"};
    Panel p;
    p.title   = "DyLLM sparse steps, " + run.update + " update: rows per bin of 1 - cos";
    p.x_label = "1 - cos (half-decade bins; first: < 1e-7, last: cos <= 0)";
    p.y_label = "share of rows (%)";
    for (int b = 0; b < kCosineBins; ++b)
        // Labels at whole decades only (odd bins start at 1 - cos = 1e-7, 1e-6, ...): half decades would overlap.
        p.x_categories.push_back(b % 2 == 1 && b < kCosineBins - 1 ? fmt("%.0e", std::pow(10.0, -7.0 + 0.5 * (b - 1)))
                                                                   : "");
    for (auto& c : p.x_categories)  // "1e-07" -> "1e-7": shorter, same value
        if (auto k = c.find("e-0"); k != std::string::npos) c.erase(k + 2, 1);
    for (size_t l = 0; l < run.layers.size(); ++l) {
        const LayerProbe& lp = run.layers[l];
        Series            s  = styled("layer " + std::to_string(l), int(l));
        for (int b = 0; b < kCosineBins; ++b) {
            const double share = lp.rows ? double(lp.hist[size_t(b)]) / double(lp.rows) : NAN;
            // 1 - cos at the bin's ends, from events.h's definition (1 - cosine_bin_*_cos() would round): bin 0 is
            // [0, 1e-7), bins 1..14 are half decades from 1e-7, the last bin (cos <= 0) is [1, 2].
            const double lo = b == 0 ? 0.0 : b == kCosineBins - 1 ? 1.0 : std::pow(10.0, -7.0 + 0.5 * (b - 1));
            const double hi = b == kCosineBins - 1 ? 2.0 : std::pow(10.0, -7.0 + 0.5 * b);
            f.table.rows.push_back({std::to_string(l), std::to_string(b), csv_number(lo), csv_number(hi),
                                    std::to_string(lp.hist[size_t(b)]), csv_number(share)});
            s.x.push_back(b);
            s.y.push_back(share * 100);
        }
        p.series.push_back(std::move(s));
    }
    // tau as a boundary: rows right of it (1 - cos >= 1 - tau) are salient. Bin b starts at x = b - 0.5 in slot units.
    if (run.tau > 0 && run.tau < 1) {
        const double x = (std::log10(1.0 - run.tau) + 7.0) * 2.0 + 1.0 - 0.5;
        p.vlines.push_back({x, "tau " + tau_text(run.tau) + ": salient ->", {200, 30, 30, 255}, true});
    }
    p.y_min        = 0;
    f.figure.title = model + ": cosine between consecutive contexts, per layer";
    f.figure.panels.push_back(std::move(p));
    return f;
}

ReportFigure lsal_by_layer_figure(const std::vector<ProbeRun>& runs, const std::string& model) {
    ReportFigure f;
    f.name         = "lsal_by_layer";
    f.table.header = {"update", "tau", "layer", "lsal_mean", "samples"};
    Panel p;
    p.title        = "L_sal: salient rows / tested rows, mean over steps";
    p.x_label      = "layer";
    p.y_label      = "L_sal (%)";
    p.x_categories = layer_categories(max_layers(runs));
    for (size_t r = 0; r < runs.size(); ++r) {
        Series s = styled(runs[r].update + ", tau " + tau_text(runs[r].tau), int(r), SeriesStyle::Bars);
        for (size_t l = 0; l < runs[r].layers.size(); ++l) {
            const LayerProbe& lp = runs[r].layers[l];
            f.table.rows.push_back({runs[r].update, tau_text(runs[r].tau), std::to_string(l),
                                    csv_number(lp.lsal_mean()), std::to_string(lp.lsal_samples)});
            s.x.push_back(double(l));
            s.y.push_back(lp.lsal_mean() * 100);
        }
        p.series.push_back(std::move(s));
    }
    f.figure.title = model + ": share of salient rows per layer (DyLLM sparse steps)";
    f.figure.panels.push_back(std::move(p));
    return f;
}

ReportFigure drift_by_layer_figure(const std::vector<ProbeRun>& runs, const std::string& model) {
    ReportFigure f;
    f.name         = "drift_by_layer";
    f.table.header = {"update", "tau", "layer", "approx_rows", "min_cos", "mean_cos", "share_below_tau"};
    Panel lo, mean;
    lo.title   = "lowest cosine";
    mean.title = "mean cosine";
    lo.x_label = mean.x_label = "layer";
    lo.y_label                = "cos(approximate, exact context)";
    lo.x_categories = mean.x_categories = layer_categories(max_layers(runs));
    lo.y_max = mean.y_max = 1.0;
    for (size_t r = 0; r < runs.size(); ++r) {
        Series smin = styled(runs[r].update, int(r)), smean = styled(runs[r].update, int(r));
        for (size_t l = 0; l < runs[r].layers.size(); ++l) {
            const LayerProbe& lp = runs[r].layers[l];
            f.table.rows.push_back(
                {runs[r].update, tau_text(runs[r].tau), std::to_string(l), std::to_string(lp.drift_rows),
                 csv_number(lp.drift_min), csv_number(lp.drift_mean()),
                 csv_number(lp.drift_rows ? double(lp.drift_below_tau) / double(lp.drift_rows) : NAN)});
            smin.add(double(l), lp.drift_min);
            smean.add(double(l), lp.drift_mean());
        }
        lo.series.push_back(std::move(smin));
        mean.series.push_back(std::move(smean));
    }
    if (!runs.empty() && runs[0].tau > 0 && runs[0].tau < 1)
        mean.hlines.push_back({runs[0].tau, "tau " + tau_text(runs[0].tau), {200, 30, 30, 255}, true});
    f.figure.title = model + ": approximate vs exact attention context of the approximated rows";
    f.figure.panels.push_back(std::move(lo));
    f.figure.panels.push_back(std::move(mean));
    return f;
}

ReportFigure accuracy_vs_tau_figure(const std::vector<AccuracyPoint>& pts, const std::string& model, int shots,
                                    int limit) {
    ReportFigure f;
    f.name         = "accuracy_vs_tau";
    f.table.header = {"variant", "tau", "n", "correct", "accuracy", "flops_vs_dense", "tokens_per_s"};
    std::vector<float>       taus;
    std::vector<std::string> variants;
    for (const auto& p : pts) {
        f.table.rows.push_back({p.variant, std::isnan(p.tau) ? "" : tau_text(p.tau), std::to_string(p.n),
                                std::to_string(p.correct), csv_number(p.n ? double(p.correct) / p.n : NAN),
                                csv_number(p.flops_vs_dense), csv_number(p.tokens_per_s)});
        if (std::isnan(p.tau)) continue;
        if (std::find(taus.begin(), taus.end(), p.tau) == taus.end()) taus.push_back(p.tau);
        if (std::find(variants.begin(), variants.end(), p.variant) == variants.end()) variants.push_back(p.variant);
    }
    Panel acc, flops;
    acc.title   = "accuracy (all tasks)";
    flops.title = "FLOPs vs dense forward";
    acc.x_label = flops.x_label = "tau";
    acc.y_label                 = "exact-match accuracy";
    for (float t : taus) acc.x_categories.push_back(tau_text(t));
    flops.x_categories = acc.x_categories;
    acc.y_min = flops.y_min = 0;
    acc.y_max = flops.y_max = 1;
    for (size_t v = 0; v < variants.size(); ++v) {
        Series sa = styled(variants[v], int(v)), sf = styled(variants[v], int(v));
        for (const auto& p : pts) {
            if (p.variant != variants[v] || std::isnan(p.tau)) continue;
            const double x = double(std::find(taus.begin(), taus.end(), p.tau) - taus.begin());
            sa.add(x, p.n ? double(p.correct) / p.n : NAN);
            sf.add(x, p.flops_vs_dense);
        }
        acc.series.push_back(std::move(sa));
        flops.series.push_back(std::move(sf));
    }
    for (const auto& p : pts)
        if (std::isnan(p.tau)) {
            const Rgba grey{70, 70, 70, 255};
            acc.hlines.push_back({p.n ? double(p.correct) / p.n : 0.0, p.variant, grey, true});
            flops.hlines.push_back({p.flops_vs_dense, p.variant, grey, true});
        }
    f.figure.title = model + ": accuracy and work against tau (" + std::to_string(shots) + "-shot, " +
                     std::to_string(limit) + " items per task)";
    f.figure.panels.push_back(std::move(acc));
    f.figure.panels.push_back(std::move(flops));
    return f;
}

ReportFigure throughput_vs_nu_figure(const std::vector<ThroughputPoint>& pts, const std::string& model) {
    ReportFigure f;
    f.name         = "throughput_vs_nu";
    f.table.header = {"method", "n_u", "steps", "tokens_per_s", "flops_per_token", "flops_vs_dense"};
    std::vector<int>         nus;
    std::vector<std::string> methods;
    double                   max_fpt = 0;
    for (const auto& p : pts) {
        f.table.rows.push_back({p.method, std::to_string(p.n_u), std::to_string(p.steps), csv_number(p.tokens_per_s),
                                csv_number(p.flops_per_token), csv_number(p.flops_vs_dense)});
        if (std::find(nus.begin(), nus.end(), p.n_u) == nus.end()) nus.push_back(p.n_u);
        if (std::find(methods.begin(), methods.end(), p.method) == methods.end()) methods.push_back(p.method);
        max_fpt = std::max(max_fpt, p.flops_per_token);
    }
    // FLOPs per token in the unit that keeps the tick labels short (tiny models: MFLOP; 8B models: GFLOP).
    const bool   giga = max_fpt >= 1e10;
    const double unit = giga ? 1e9 : 1e6;
    Panel        tps, fpt;
    tps.title   = "throughput";
    fpt.title   = std::string("work per generated token");
    tps.x_label = fpt.x_label = "n_u (tokens unmasked per step)";
    tps.y_label               = "tokens / s";
    fpt.y_label               = giga ? "GFLOP / token" : "MFLOP / token";
    for (int n : nus) tps.x_categories.push_back(std::to_string(n));
    fpt.x_categories = tps.x_categories;
    tps.y_min = fpt.y_min = 0;
    for (size_t m = 0; m < methods.size(); ++m) {
        Series st = styled(methods[m], int(m)), sf = styled(methods[m], int(m));
        for (const auto& p : pts) {
            if (p.method != methods[m]) continue;
            const double x = double(std::find(nus.begin(), nus.end(), p.n_u) - nus.begin());
            st.add(x, p.tokens_per_s);
            sf.add(x, p.flops_per_token / unit);
        }
        tps.series.push_back(std::move(st));
        fpt.series.push_back(std::move(sf));
    }
    f.figure.title = model + ": DyLLM vs Fast-dLLM dual cache against n_u";
    f.figure.panels.push_back(std::move(tps));
    f.figure.panels.push_back(std::move(fpt));
    return f;
}

std::vector<float> parse_tau_list(const std::string& flag, const std::string& text) {
    std::vector<float> taus;
    size_t             start = 0;
    while (start <= text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        std::string  item  = text.substr(start, comma - start);
        const auto   b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
        item = b == std::string::npos ? "" : item.substr(b, e - b + 1);
        if (item.empty()) throw InputError(flag + ": empty item in '" + text + "' (expected e.g. 0.95,0.99)");
        errno            = 0;
        char*        end = nullptr;
        const double v   = std::strtod(item.c_str(), &end);
        if (end != item.c_str() + item.size() || errno == ERANGE || !std::isfinite(v))
            throw InputError(flag + ": '" + item + "' is not a number");
        if (!(v > 0 && v <= 1))
            throw InputError(flag + ": tau " + item + " is outside (0, 1] (a cosine threshold the figure compares)");
        if (std::find(taus.begin(), taus.end(), float(v)) != taus.end())
            throw InputError(flag + ": tau " + item + " is given twice");
        taus.push_back(float(v));
        start = comma + 1;
    }
    return taus;
}

}  // namespace dyllm::app
