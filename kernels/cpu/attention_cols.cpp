// Optimised column-sparse approximate attention: per (row, head), vector dot products against the salient keys,
// weights exp(score - lse) in fp32, and a vector multiply-add of their dV rows into the context.
#include "kernels/cpu/attention_cols.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/simd.h"

namespace dyllm::cpu {

namespace {

// Rows per task: a few rows amortise the hand-off; the work per row is |S| * n_head * 4 D FLOPs.
constexpr int64_t kRowsPerTask = 8;

DYLLM_CPU_CLONES void cols_rows(CMatF q, const int32_t* q_seq, CMatF k, CMatF dv, const int32_t* sal_k,
                                const int32_t* cu_sal, CMatF lse, CMatF c_old, AttnDims dims, MatF c_new, int64_t i0,
                                int64_t i1) {
    const int   D     = dims.head_dim;
    const int   group = dims.n_head / dims.n_kv_head;
    const float scale = 1.0f / std::sqrt(float(D));
    for (int64_t i = i0; i < i1; ++i) {
        const int b = q_seq[i];
        for (int h = 0; h < dims.n_head; ++h) {
            const float*  qi     = q.row(i) + int64_t(h) * D;
            const int64_t kv_off = int64_t(h / group) * D;
            const float   z      = lse.row(i)[h];
            const float*  co     = c_old.row(i) + int64_t(h) * D;
            float*        cn     = c_new.row(i) + int64_t(h) * D;
            if (co != cn)
                for (int c = 0; c < D; ++c) cn[c] = co[c];
            if (!std::isfinite(z)) continue;  // no keys at the last exact attention: nothing to update
            for (int64_t t = cu_sal[b]; t < cu_sal[b + 1]; ++t) {
                const float  s  = simd::dot(qi, k.row(sal_k[t]) + kv_off, D) * scale;
                const float  p  = std::exp(s - z);
                const float* dr = dv.row(t) + kv_off;
                for (int c = 0; c < D; ++c) cn[c] += p * dr[c];
            }
        }
    }
}

}  // namespace

void attention_cols(CMatF q, const int32_t* q_seq, CMatF k, CMatF dv, const int32_t* sal_k, const int32_t* cu_sal,
                    CMatF lse, CMatF c_old, AttnDims dims, MatF c_new, ThreadPool& pool) {
    if (q.rows == 0) return;
    const int64_t n_tasks = (q.rows + kRowsPerTask - 1) / kRowsPerTask;
    pool.parallel_for(n_tasks, [&](int64_t task, int) {
        const int64_t i0 = task * kRowsPerTask;
        cols_rows(q, q_seq, k, dv, sal_k, cu_sal, lse, c_old, dims, c_new, i0, std::min(q.rows, i0 + kRowsPerTask));
    });
}

}  // namespace dyllm::cpu
