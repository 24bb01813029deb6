// Reference exact attention: per (row, head), fp64 scores, a max-subtracted softmax, then the weighted sum of V.
#include "kernels/cpu/ref/attention.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/ref/attention_weights.h"

namespace dyllm::cpu::ref {

void attention(CMatF q, const int32_t* q_seq, CMatF k, CMatF v, const int32_t* cu_k, AttnDims dims, MatF out,
               MatF lse) {
    const int           D     = dims.head_dim;
    const int           group = dims.n_head / dims.n_kv_head;
    const double        scale = 1.0 / std::sqrt(double(D));
    std::vector<double> s, acc(static_cast<size_t>(D));
    for (int64_t i = 0; i < q.rows; ++i) {
        const int64_t k0 = cu_k[q_seq[i]], k1 = cu_k[q_seq[i] + 1];
        for (int h = 0; h < dims.n_head; ++h) {
            const float*  qi     = q.row(i) + int64_t(h) * D;
            const int64_t kv_off = int64_t(h / group) * D;
            double        m      = 0.0;
            const double  l      = attention_weights(qi, k, k0, k1, kv_off, D, scale, s, &m);
            if (lse.data) lse.row(i)[h] = l > 0.0 ? float(m + std::log(l)) : -INFINITY;
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int64_t j = k0; j < k1; ++j)
                for (int c = 0; c < D; ++c) acc[size_t(c)] += s[size_t(j - k0)] * double(v.row(j)[kv_off + c]);
            float* oi = out.row(i) + int64_t(h) * D;
            for (int c = 0; c < D; ++c) oi[c] = l > 0.0 ? float(acc[size_t(c)] / l) : 0.0f;
        }
    }
}

}  // namespace dyllm::cpu::ref
