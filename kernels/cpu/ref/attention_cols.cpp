// Reference column-sparse approximate attention: per (row, head), fp64 scores of the salient keys, weights
// exp(score - cached lse), the weighted sum of their dV added to the old context.
#include "kernels/cpu/ref/attention_cols.h"

#include <cmath>
#include <vector>

namespace dyllm::cpu::ref {

void attention_cols(CMatF q, const int32_t* q_seq, CMatF k, CMatF dv, const int32_t* sal_k, const int32_t* cu_sal,
                    CMatF lse, CMatF c_old, AttnDims dims, MatF c_new) {
    const int           D     = dims.head_dim;
    const int           group = dims.n_head / dims.n_kv_head;
    const double        scale = 1.0 / std::sqrt(double(D));
    std::vector<double> acc(static_cast<size_t>(D));
    for (int64_t i = 0; i < q.rows; ++i) {
        const int b = q_seq[i];
        for (int h = 0; h < dims.n_head; ++h) {
            const float*  qi     = q.row(i) + int64_t(h) * D;
            const int64_t kv_off = int64_t(h / group) * D;
            const double  z      = lse.row(i)[h];
            std::fill(acc.begin(), acc.end(), 0.0);
            if (std::isfinite(z)) {
                for (int64_t t = cu_sal[b]; t < cu_sal[b + 1]; ++t) {
                    const float* kj = k.row(sal_k[t]) + kv_off;
                    double       d  = 0.0;
                    for (int c = 0; c < D; ++c) d += double(qi[c]) * double(kj[c]);
                    const double p = std::exp(d * scale - z);
                    for (int c = 0; c < D; ++c) acc[size_t(c)] += p * double(dv.row(t)[kv_off + c]);
                }
            }
            const float* co = c_old.row(i) + int64_t(h) * D;
            float*       cn = c_new.row(i) + int64_t(h) * D;
            for (int c = 0; c < D; ++c) cn[c] = float(double(co[c]) + acc[size_t(c)]);
        }
    }
}

}  // namespace dyllm::cpu::ref
