// Drift measurement: exact attention for the approximated rows, compared with the contexts the approximation gave.
#include "engine/methods/drift.h"

#include <algorithm>
#include <cmath>

namespace dyllm {

void measure_drift(Forward& fwd, const TensorView& Q, const RowSet& q, const RowSet& s_prev, const LayerCache& c,
                   const BatchLayout& lay, const TensorView& c_new, std::vector<float>& drift) {
    drift.assign(q.size(), NAN);
    // The approximated rows: q minus s_prev (both ascending by row).
    RowSet               a;
    std::vector<int32_t> idx;
    size_t               j = 0;
    for (size_t i = 0; i < q.size(); ++i) {
        while (j < s_prev.size() && s_prev.rows[j] < q.rows[i]) ++j;
        if (j < s_prev.size() && s_prev.rows[j] == q.rows[i]) continue;
        a.push(q.rows[i], q.seq[i], q.pos[i]);
        idx.push_back(int32_t(i));
    }
    if (a.empty()) return;
    // Straight to the backend: Forward's wrappers would count these FLOPs in the method's accounting.
    Backend&           be  = fwd.backend();
    const ModelConfig& cfg = fwd.config();
    const int64_t      n   = int64_t(a.size());
    Tensor qa = fwd.alloc(n, cfg.q_dim()), approx = fwd.alloc(n, cfg.q_dim()), exact = fwd.alloc(n, cfg.q_dim());
    be.gather_rows(Q, idx, qa);
    be.gather_rows(c_new, idx, approx);
    be.attention(qa, a.seq, c.k, c.v, lay.cu, AttentionShape{cfg.n_head, cfg.n_kv_head, cfg.head_dim}, exact);
    std::vector<float> cos(a.size());
    be.cosine_rows(approx, exact, cos);
    for (size_t i = 0; i < idx.size(); ++i) drift[size_t(idx[i])] = cos[i];
}

DriftSummary summarize_drift(std::span<const float> drift) {
    DriftSummary s;
    double       sum = 0;
    for (float v : drift) {
        if (std::isnan(v)) continue;
        s.hist[size_t(cosine_bin(v))]++;
        s.min = s.count == 0 ? v : std::min(s.min, v);
        sum += double(v);
        ++s.count;
    }
    if (s.count > 0) s.mean = float(sum / s.count);
    return s;
}

}  // namespace dyllm
