// Drift of DyLLM's approximate attention (opt-in, DiffusionParams::measure_drift): for the rows whose context the
// approximation served, the cosine between that context and exact attention over the same caches (engine/README.md).
#pragma once
#include <cmath>
#include <span>
#include <vector>

#include "engine/forward.h"

namespace dyllm {

// After layer l's attention: q are the query rows (Q: [q.size(), q_dim], after RoPE), s_prev the rows that got exact
// attention (S_{l-1}, a subset of q), c the layer's caches with this step's K/V patched in, and c_new: [q.size(),
// q_dim] the contexts the layer will use. Fills drift with one cosine per row of q between c_new and exact attention,
// NaN for the rows of s_prev (exact already). Only measured: nothing is written back, and the work goes neither into
// the layer's FLOP accounting nor into op timings (it only lengthens the step's wall time).
void measure_drift(Forward& fwd, const TensorView& Q, const RowSet& q, const RowSet& s_prev, const LayerCache& c,
                   const BatchLayout& lay, const TensorView& c_new, std::vector<float>& drift);

// A layer's drift over some rows: the values that are not NaN (the approximated rows).
struct DriftSummary {
    CosineHistogram hist{};  // cosine_bin() counts, the saliency histogram's bins
    int32_t         count = 0;
    float           min   = NAN;
    float           mean  = NAN;
};
DriftSummary summarize_drift(std::span<const float> drift);

}  // namespace dyllm
