// Optimised column-sparse approximate attention: per (row, head), vector dot products against the salient keys and
// fp32 weights exp(score - lse). The incremental form keeps its sums scaled by exp(-M), M the running maximum of the
// shifted scores (the online-softmax rescaling), so a key whose score rose far above the cached lse cannot overflow.
#include "kernels/cpu/attention_cols.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/ref/attention_cols.h"
#include "kernels/cpu/simd.h"

namespace dyllm::cpu {

namespace {

// Rows per task: a few rows amortise the hand-off; the work per row is |S| * n_head * 4-8 D FLOPs.
constexpr int64_t kRowsPerTask = 8;
constexpr int     kStackHeadDim = 512;  // head_dim of every model family here is 64-128

DYLLM_CPU_CLONES void cols_rows(CMatF q, const int32_t* q_seq, CMatF k, CMatF dv, const int32_t* sal_k,
                                const int32_t* cu_sal, CMatF lse, CMatF c_old, AttnDims dims, MatF c_new,
                                CMatF k_old, CMatF v_old, MatF lse_out, int64_t i0, int64_t i1, float* scratch) {
    const int   D     = dims.head_dim;
    const int   group = dims.n_head / dims.n_kv_head;
    const float scale = 1.0f / std::sqrt(float(D));
    const bool  inc   = k_old.data != nullptr;
    for (int64_t i = i0; i < i1; ++i) {
        const int b = q_seq[i];
        for (int h = 0; h < dims.n_head; ++h) {
            const float*  qi     = q.row(i) + int64_t(h) * D;
            const int64_t kv_off = int64_t(h / group) * D;
            const float   z      = lse.row(i)[h];
            const float*  co     = c_old.row(i) + int64_t(h) * D;
            float*        cn     = c_new.row(i) + int64_t(h) * D;
            if (co != cn)
                for (int c = 0; c < D; ++c) cn[c] = co[c];  // the result when nothing changes or on a fallback
            float out_lse = z;
            if (std::isfinite(z) && !inc) {
                for (int64_t t = cu_sal[b]; t < cu_sal[b + 1]; ++t) {
                    const float  p  = std::exp(simd::dot(qi, k.row(sal_k[t]) + kv_off, D) * scale - z);
                    const float* dr = dv.row(t) + kv_off;
                    for (int c = 0; c < D; ++c) cn[c] += p * dr[c];
                }
            } else if (std::isfinite(z) && cu_sal[b] < cu_sal[b + 1]) {
                // acc, rest and z_new are held scaled by exp(-m): m = 0 at the start (the cached normaliser is 1). cn
                // is written only at the end, so a fallback leaves an in-place c_old untouched.
                float* acc = scratch;
                for (int c = 0; c < D; ++c) acc[c] = co[c];
                float m = 0.0f, rest = 1.0f, z_new = 0.0f;
                for (int64_t t = cu_sal[b]; t < cu_sal[b + 1]; ++t) {
                    const float s_new = simd::dot(qi, k.row(sal_k[t]) + kv_off, D) * scale - z;
                    const float s_old = simd::dot(qi, k_old.row(t) + kv_off, D) * scale - z;
                    const float m_new = std::max(m, std::max(s_new, s_old));
                    if (m_new > m) {
                        const float r = std::exp(m - m_new);
                        for (int c = 0; c < D; ++c) acc[c] *= r;
                        rest *= r, z_new *= r, m = m_new;
                    }
                    const float  p = std::exp(s_new - m), p_old = std::exp(s_old - m);
                    const float* vo = v_old.row(t) + kv_off;
                    const float* dr = dv.row(t) + kv_off;
                    rest -= p_old;
                    z_new += p;
                    for (int c = 0; c < D; ++c) acc[c] += (p - p_old) * vo[c] + p * dr[c];
                }
                if (rest < float(ref::kColsMinRestMass) * std::exp(-m)) {  // mostly changed keys: recompute exactly
                    out_lse = NAN;
                } else {
                    const float zs = rest + z_new, inv = 1.0f / zs;
                    for (int c = 0; c < D; ++c) cn[c] = acc[c] * inv;
                    out_lse = z + m + std::log(zs);
                }
            }
            if (lse_out.data) lse_out.row(i)[h] = out_lse;
        }
    }
}

}  // namespace

void attention_cols(CMatF q, const int32_t* q_seq, CMatF k, CMatF dv, const int32_t* sal_k, const int32_t* cu_sal,
                    CMatF lse, CMatF c_old, AttnDims dims, MatF c_new, ThreadPool& pool, CMatF k_old, CMatF v_old,
                    MatF lse_out) {
    if (q.rows == 0) return;
    const int64_t n_tasks = (q.rows + kRowsPerTask - 1) / kRowsPerTask;
    // Work in kMinSplitWork's unit (element-operations): rows x heads x salient keys of the sequence x D x 2-4 passes.
    int64_t work = 0;
    for (int64_t i = 0; i < q.rows; ++i) work += int64_t(cu_sal[q_seq[i] + 1] - cu_sal[q_seq[i]]);
    work *= int64_t(dims.n_head) * dims.head_dim * (k_old.data ? 4 : 2);
    pool.parallel_for(n_tasks, work, [&](int64_t task, int) {
        // One head_dim accumulator per task: on the stack for every head size the models use (no allocation in the
        // step loop), on the heap beyond.
        float              stack_acc[kStackHeadDim];
        std::vector<float> heap_acc(dims.head_dim > kStackHeadDim ? size_t(dims.head_dim) : 0);
        float*             acc = heap_acc.empty() ? stack_acc : heap_acc.data();
        const int64_t      i0  = task * kRowsPerTask;
        cols_rows(q, q_seq, k, dv, sal_k, cu_sal, lse, c_old, dims, c_new, k_old, v_old, lse_out, i0,
                  std::min(q.rows, i0 + kRowsPerTask), acc);
    });
}

}  // namespace dyllm::cpu
