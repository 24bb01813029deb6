// The report's saliency probe: an EventSink that pools DyLLM's per-layer saliency over the sparse steps of its runs
// (cosine histograms, the share of salient rows L_sal) and the opt-in drift measurement (approx-vs-exact cosines).
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "instrumentation/events.h"

namespace dyllm::app {

struct LayerProbe {
    std::array<uint64_t, kCosineBins> hist{};               // tested rows per cosine_bin(), sparse steps only
    int64_t                           rows            = 0;  // sum of hist
    double                            lsal_sum        = 0;  // sum over (step, sequence) of n_salient / n_rows
    int64_t                           lsal_samples    = 0;
    int64_t                           drift_rows      = 0;  // approximated rows with a drift measurement
    int64_t                           drift_below_tau = 0;  // of them, approx-vs-exact cosine < the step's tau
    double                            drift_min = NAN, drift_sum = 0;

    double lsal_mean() const { return lsal_samples ? lsal_sum / double(lsal_samples) : NAN; }
    double drift_mean() const { return drift_rows ? drift_sum / double(drift_rows) : NAN; }
};

class SaliencyProbe : public EventSink {
public:
    void on_step_begin(const StepBegin& e) override {
        sparse_ = e.kind == StepKind::SparseFullQuery || e.kind == StepKind::SparseResponse;
    }
    void on_layer_saliency(const LayerSaliency& e) override;
    bool wants_cosines() const override { return true; }  // per-row drift values decide "below tau"
    bool wants_op_timings() const override { return false; }

    const std::vector<LayerProbe>& layers() const { return layers_; }

private:
    std::vector<LayerProbe> layers_;
    bool                    sparse_ = false;
};

}  // namespace dyllm::app
