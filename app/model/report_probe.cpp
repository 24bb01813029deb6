// SaliencyProbe: per-layer pooling of LayerSaliency events over DyLLM's sparse steps.
#include "app/model/report_probe.h"

#include <algorithm>

namespace dyllm::app {

void SaliencyProbe::on_layer_saliency(const LayerSaliency& e) {
    // Dense steps test nothing (or, with measure_cosine, every row against a recomputed context): the paper's
    // distributions are those of the cached steps.
    if (!sparse_ || e.layer < 0 || e.n_rows <= 0) return;
    if (size_t(e.layer) >= layers_.size()) layers_.resize(size_t(e.layer) + 1);
    LayerProbe& l = layers_[size_t(e.layer)];
    for (int b = 0; b < kCosineBins; ++b) l.hist[size_t(b)] += e.hist[size_t(b)];
    for (uint32_t c : e.hist) l.rows += c;
    l.lsal_sum += double(e.n_salient) / double(e.n_rows);
    ++l.lsal_samples;
    if (e.drift_count <= 0) return;
    if (!e.drift.empty()) {
        for (float v : e.drift) {
            if (std::isnan(v)) continue;
            ++l.drift_rows;
            l.drift_sum += v;
            l.drift_below_tau += v < e.tau;
            l.drift_min = std::isnan(l.drift_min) ? v : std::min(l.drift_min, double(v));
        }
    } else {
        // A sink upstream declined the per-row values: count, mean and min still arrive as summaries.
        l.drift_rows += e.drift_count;
        l.drift_sum += double(e.drift_mean) * e.drift_count;
        l.drift_min = std::isnan(l.drift_min) ? e.drift_min : std::min(l.drift_min, double(e.drift_min));
    }
}

}  // namespace dyllm::app
