// DriftTally: a sink that sums the drift measurement (LayerSaliency drift, engine option measure_drift) per layer over
// a run or several, for the CLI's drift tables: approximated rows, how many fell below tau, and the lowest cosine.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "instrumentation/events.h"

namespace dyllm {

struct LayerDriftTally {
    int64_t approx_rows  = 0;  // rows whose context the approximation served (drift measured)
    int64_t below_tau    = 0;  // of them, approx-vs-exact cosine < the step's tau
    int64_t stable_below = 0;  // of those, rows the cosine test then called stable (kept out of S_l)
    double  min          = 1;  // lowest cosine seen (1 while approx_rows == 0)
    double  sum          = 0;  // for the mean
};

class DriftTally : public EventSink {
public:
    void on_layer_saliency(const LayerSaliency& e) override;
    bool wants_cosines() const override { return true; }  // the per-row values decide "below tau"
    bool wants_op_timings() const override { return false; }

    const std::vector<LayerDriftTally>& layers() const { return layers_; }
    // Markdown table, one row per layer: | layer | approx rows | < tau | share | stable & < tau | min | mean |.
    std::string table() const;

private:
    std::vector<LayerDriftTally> layers_;
};

}  // namespace dyllm
