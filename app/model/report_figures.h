// The figures of `dyllm report`: each one a CSV table and a chart built from the same numbers (cosine distributions
// and L_sal per layer, accuracy against tau, approx-vs-exact drift per layer, throughput against n_u).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "app/model/plot_chart.h"
#include "app/model/report_probe.h"

namespace dyllm::app {

struct CsvTable {
    std::vector<std::string>              header;
    std::vector<std::vector<std::string>> rows;
};
// RFC 4180: fields with a comma, quote or newline are quoted (quotes doubled); "\n" line ends.
void write_csv(std::ostream& os, const CsvTable& t);
// A number as CSV text: shortest round-trip form, NaN as an empty field.
std::string csv_number(double v);

struct ReportFigure {
    std::string name;  // file stem: <name>.csv and <name>.png
    CsvTable    table;
    Figure      figure;
};

// A probed update rule (authors' approximation, incremental, ...) and its per-layer statistics.
struct ProbeRun {
    std::string             update;  // legend / CSV name
    float                   tau = 0;
    std::vector<LayerProbe> layers;
};

// 1. cosine_by_layer: layer,bin,one_minus_cos_lo,one_minus_cos_hi,rows,share (share of the layer's tested rows).
ReportFigure cosine_by_layer_figure(const ProbeRun& run, const std::string& model);
// 2. lsal_by_layer: update,tau,layer,lsal_mean,samples.
ReportFigure lsal_by_layer_figure(const std::vector<ProbeRun>& runs, const std::string& model);
// 4. drift_by_layer: update,tau,layer,approx_rows,min_cos,mean_cos,share_below_tau.
ReportFigure drift_by_layer_figure(const std::vector<ProbeRun>& runs, const std::string& model);

// 3. One accuracy measurement: a variant at one tau (NaN for `original`, drawn as a horizontal line).
struct AccuracyPoint {
    std::string variant;
    float       tau = NAN;
    int         n = 0, correct = 0;
    double      flops_vs_dense = 1, tokens_per_s = 0;
};
// accuracy_vs_tau: variant,tau,n,correct,accuracy,flops_vs_dense,tokens_per_s. Two panels: accuracy and FLOPs vs
// dense against tau (taus in the order given by the points of the first variant).
ReportFigure accuracy_vs_tau_figure(const std::vector<AccuracyPoint>& pts, const std::string& model, int shots,
                                    int limit);

// 5. One throughput measurement: a method at n_u tokens per step.
struct ThroughputPoint {
    std::string method;
    int         n_u = 1, steps = 0;
    double      tokens_per_s = 0, flops_per_token = 0, flops_vs_dense = 1;
};
// throughput_vs_nu: method,n_u,steps,tokens_per_s,flops_per_token,flops_vs_dense. Two panels: tokens/s and
// MFLOPs per token against n_u.
ReportFigure throughput_vs_nu_figure(const std::vector<ThroughputPoint>& pts, const std::string& model);

// Parses a tau list "0.95,0.98": each item a number in (0, 1] (the cosine thresholds the figure compares), at least
// one, no duplicates. Throws InputError naming `flag` and the bad item.
std::vector<float> parse_tau_list(const std::string& flag, const std::string& text);

}  // namespace dyllm::app
