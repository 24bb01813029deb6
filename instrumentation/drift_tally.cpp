// DriftTally: per-layer sums of the approx-vs-exact context cosines of the approximated rows.
#include "instrumentation/drift_tally.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dyllm {

void DriftTally::on_layer_saliency(const LayerSaliency& e) {
    if (e.drift_count <= 0 || e.layer < 0) return;
    if (size_t(e.layer) >= layers_.size()) layers_.resize(size_t(e.layer) + 1);
    LayerDriftTally& t = layers_[size_t(e.layer)];
    for (size_t i = 0; i < e.drift.size() && i < e.row_positions.size(); ++i) {
        const float v = e.drift[i];
        if (std::isnan(v)) continue;
        ++t.approx_rows;
        t.min = std::min(t.min, double(v));
        t.sum += double(v);
        if (!(v < e.tau)) continue;
        ++t.below_tau;
        const int32_t pos = e.row_positions[i];
        t.stable_below += !std::binary_search(e.salient_positions.begin(), e.salient_positions.end(), pos);
    }
}

std::string DriftTally::table() const {
    std::string out =
        "| layer | approx rows | cos < tau | share | of them kept stable | min cos | mean cos |\n"
        "|------:|------------:|----------:|------:|--------------------:|--------:|---------:|\n";
    char line[160];
    for (size_t l = 0; l < layers_.size(); ++l) {
        const LayerDriftTally& t = layers_[l];
        const double           n = double(std::max<int64_t>(t.approx_rows, 1));
        std::snprintf(line, sizeof line, "| %zu | %lld | %lld | %.3f | %lld | %.4f | %.5f |\n", l,
                      static_cast<long long>(t.approx_rows), static_cast<long long>(t.below_tau),
                      double(t.below_tau) / n, static_cast<long long>(t.stable_below), t.min, t.sum / n);
        out += line;
    }
    return out;
}

}  // namespace dyllm
