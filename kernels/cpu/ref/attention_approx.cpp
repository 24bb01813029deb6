// Reference approximate attention: the full fp64 softmax over every key of the sequence, then the dv-weighted sum over
// the salient keys only, added to the old context.
#include "kernels/cpu/ref/attention_approx.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/ref/attention_weights.h"

namespace dyllm::cpu::ref {

void attention_approx(CMatF q, const int32_t* q_seq, CMatF k, CMatF dv, const int32_t* sal_k, const int32_t* cu_sal,
                      const int32_t* cu_k, CMatF c_old, AttnDims dims, MatF c_new) {
    const int           D     = dims.head_dim;
    const int           group = dims.n_head / dims.n_kv_head;
    const double        scale = 1.0 / std::sqrt(double(D));
    std::vector<double> s, acc(static_cast<size_t>(D));
    for (int64_t i = 0; i < q.rows; ++i) {
        const int     b  = q_seq[i];
        const int64_t k0 = cu_k[b], k1 = cu_k[b + 1];
        for (int h = 0; h < dims.n_head; ++h) {
            const float*  qi     = q.row(i) + int64_t(h) * D;
            const int64_t kv_off = int64_t(h / group) * D;
            const double  l      = attention_weights(qi, k, k0, k1, kv_off, D, scale, s);
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int64_t t = cu_sal[b]; t < cu_sal[b + 1]; ++t) {
                const double p = s[size_t(sal_k[t] - k0)] / l;
                for (int c = 0; c < D; ++c) acc[size_t(c)] += p * double(dv.row(t)[kv_off + c]);
            }
            const float* co = c_old.row(i) + int64_t(h) * D;
            float*       cn = c_new.row(i) + int64_t(h) * D;
            for (int c = 0; c < D; ++c) cn[c] = float(double(co[c]) + acc[size_t(c)]);
        }
    }
}

}  // namespace dyllm::cpu::ref
