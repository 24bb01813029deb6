// Reference column-sparse approximate attention: per (row, head), fp64 scores of the salient keys against the cached
// log-sum-exp; the plain form adds their weighted dV, the incremental form swaps their old terms for the new ones and
// renormalises.
#include "kernels/cpu/ref/attention_cols.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dyllm::cpu::ref {

namespace {

double dot(const float* a, const float* b, int D) {
    double d = 0.0;
    for (int c = 0; c < D; ++c) d += double(a[c]) * double(b[c]);
    return d;
}

}  // namespace

void attention_cols(CMatF q, const int32_t* q_seq, CMatF k, CMatF dv, const int32_t* sal_k, const int32_t* cu_sal,
                    CMatF lse, CMatF c_old, AttnDims dims, MatF c_new, CMatF k_old, CMatF v_old, MatF lse_out) {
    const int           D     = dims.head_dim;
    const int           group = dims.n_head / dims.n_kv_head;
    const double        scale = 1.0 / std::sqrt(double(D));
    const bool          inc   = k_old.data != nullptr;
    std::vector<double> acc(static_cast<size_t>(D));
    for (int64_t i = 0; i < q.rows; ++i) {
        const int b = q_seq[i];
        for (int h = 0; h < dims.n_head; ++h) {
            const float*  qi     = q.row(i) + int64_t(h) * D;
            const int64_t kv_off = int64_t(h / group) * D;
            const double  z      = lse.row(i)[h];
            const float*  co     = c_old.row(i) + int64_t(h) * D;
            for (int c = 0; c < D; ++c) acc[size_t(c)] = co[c];
            double out_lse = z;
            if (std::isfinite(z)) {
                double rest = 1.0, z_new = 0.0;
                for (int64_t t = cu_sal[b]; t < cu_sal[b + 1]; ++t) {
                    const double p  = std::exp(dot(qi, k.row(sal_k[t]) + kv_off, D) * scale - z);
                    const float* dr = dv.row(t) + kv_off;
                    if (!inc) {
                        for (int c = 0; c < D; ++c) acc[size_t(c)] += p * double(dr[c]);
                        continue;
                    }
                    const double p_old = std::exp(dot(qi, k_old.row(t) + kv_off, D) * scale - z);
                    const float* vo    = v_old.row(t) + kv_off;
                    rest -= p_old;
                    z_new += p;
                    for (int c = 0; c < D; ++c)
                        acc[size_t(c)] += p * (double(vo[c]) + double(dr[c])) - p_old * double(vo[c]);
                }
                if (inc && rest < kColsMinRestMass) {
                    for (int c = 0; c < D; ++c) acc[size_t(c)] = co[c];
                    out_lse = NAN;
                } else if (inc) {
                    const double zs = rest + z_new;
                    for (double& a : acc) a /= zs;
                    out_lse = z + std::log(zs);
                }
            }
            float* cn = c_new.row(i) + int64_t(h) * D;
            for (int c = 0; c < D; ++c) cn[c] = float(acc[size_t(c)]);
            if (lse_out.data) lse_out.row(i)[h] = float(out_lse);
        }
    }
}

}  // namespace dyllm::cpu::ref
