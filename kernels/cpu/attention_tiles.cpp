// Attention task planning, the block softmax (a transposed 16-key tile against 4 query rows at a time: broadcast-FMA
// with no horizontal sums; then row max, exp and sum in place) and the register-blocked P x V product.
#include "kernels/cpu/attention_tiles.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/simd.h"

// 16-lane values only pass between always-inlined helpers here (see simd.h).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace dyllm::cpu::detail {

using simd::V16;


void plan_attention(AttnPlan& plan, const int32_t* q_seq, int64_t nq, const int32_t* cu_k, int n_seq, int n_head,
                    int row_block) {
    plan.start.assign(size_t(n_seq) + 1, 0);
    std::vector<int64_t>& start = plan.start;
    for (int64_t i = 0; i < nq; ++i) ++start[size_t(q_seq[i]) + 1];
    for (int b = 0; b < n_seq; ++b) start[size_t(b) + 1] += start[size_t(b)];
    plan.order.resize(size_t(nq));
    plan.fill.assign(start.begin(), start.end() - 1);
    for (int64_t i = 0; i < nq; ++i) plan.order[size_t(plan.fill[size_t(q_seq[i])]++)] = int32_t(i);
    plan.max_keys = 0;
    plan.tasks.clear();
    for (int b = 0; b < n_seq; ++b) {
        const int64_t n_rows = start[size_t(b) + 1] - start[size_t(b)];
        if (n_rows == 0) continue;
        plan.max_keys = std::max<int64_t>(plan.max_keys, cu_k[b + 1] - cu_k[b]);
        for (int h = 0; h < n_head; ++h)
            for (int64_t r = 0; r < n_rows; r += row_block)
                plan.tasks.push_back({b, h, start[size_t(b)] + r, int32_t(std::min<int64_t>(row_block, n_rows - r))});
    }
}

int64_t plan_work(const AttnPlan& plan, const int32_t* cu_k, int head_dim) {
    int64_t w = 0;
    for (const AttnTask& t : plan.tasks) w += 2 * int64_t(t.n) * (cu_k[t.seq + 1] - cu_k[t.seq]) * head_dim;
    return w;
}

void AttnScratch::size_for(int row_block, int64_t max_keys, int head_dim, int64_t kt_floats) {
    // resize() only allocates when a shape grows.
    p.resize(size_t(int64_t(row_block) * std::max<int64_t>(max_keys, 1)));
    acc.resize(size_t(row_block * head_dim));
    l.resize(size_t(row_block));
    m.resize(size_t(row_block));
    kt.resize(size_t(kt_floats));
}

DYLLM_CPU_CLONES void softmax_block(CMatF q, const int32_t* rows, int n, int h, CMatF k, int64_t k0, int64_t k1,
                                    AttnDims dims, float* p, int64_t ld_p, float* l, float* kt, float* m_out) {
    constexpr int KT     = kKeyTile;
    const int     D      = dims.head_dim;
    const int64_t kv_off = int64_t(h / (dims.n_head / dims.n_kv_head)) * D;
    const float   scale  = 1.0f / std::sqrt(float(D));
    const int64_t nk     = k1 - k0;
    for (int64_t jb = 0; jb < nk; jb += KT) {
        const int nb = int(std::min<int64_t>(KT, nk - jb));
        // Transpose the key tile: kt[c * KT + t] = k[k0 + jb + t, kv_off + c] (zero past the sequence end).
        for (int t = 0; t < KT; ++t) {
            if (t < nb) {
                const float* kr = k.row(k0 + jb + t) + kv_off;
                for (int c = 0; c < D; ++c) kt[c * KT + t] = kr[c];
            } else {
                for (int c = 0; c < D; ++c) kt[c * KT + t] = 0.0f;
            }
        }
        int r = 0;
        for (; r + 4 <= n; r += 4) {  // 4 query rows: 4 independent accumulator chains
            const float* q0 = q.row(rows[r]) + int64_t(h) * D;
            const float* q1 = q.row(rows[r + 1]) + int64_t(h) * D;
            const float* q2 = q.row(rows[r + 2]) + int64_t(h) * D;
            const float* q3 = q.row(rows[r + 3]) + int64_t(h) * D;
            float        a0[KT] = {}, a1[KT] = {}, a2[KT] = {}, a3[KT] = {};
            for (int c = 0; c < D; ++c) {
                const float* kc = kt + c * KT;
                const float  x0 = q0[c], x1 = q1[c], x2 = q2[c], x3 = q3[c];
                for (int t = 0; t < KT; ++t) {
                    a0[t] += x0 * kc[t];
                    a1[t] += x1 * kc[t];
                    a2[t] += x2 * kc[t];
                    a3[t] += x3 * kc[t];
                }
            }
            for (int t = 0; t < nb; ++t) {
                p[(r + 0) * ld_p + jb + t] = a0[t] * scale;
                p[(r + 1) * ld_p + jb + t] = a1[t] * scale;
                p[(r + 2) * ld_p + jb + t] = a2[t] * scale;
                p[(r + 3) * ld_p + jb + t] = a3[t] * scale;
            }
        }
        for (; r < n; ++r) {
            const float* q0     = q.row(rows[r]) + int64_t(h) * D;
            float        a0[KT] = {};
            for (int c = 0; c < D; ++c)
                for (int t = 0; t < KT; ++t) a0[t] += q0[c] * kt[c * KT + t];
            for (int t = 0; t < nb; ++t) p[r * ld_p + jb + t] = a0[t] * scale;
        }
    }
    for (int r = 0; r < n; ++r) {
        float*  pr = p + r * ld_p;
        float   m  = -INFINITY;
        int64_t j0 = 0;
        if (nk >= 16) {  // 16-lane max (the scalar compare chain was half of this function's time)
            V16 mv = *reinterpret_cast<const V16*>(pr);
            for (j0 = 16; j0 + 16 <= nk; j0 += 16) {
                const V16 x = *reinterpret_cast<const V16*>(pr + j0);
                mv          = x > mv ? x : mv;
            }
            for (int t = 0; t < 16; ++t) m = mv[t] > m ? mv[t] : m;
        }
        for (int64_t j = j0; j < nk; ++j) m = pr[j] > m ? pr[j] : m;
        // exp and sum, 16 lanes at a time (a scalar expf call per score was the hot spot of this function).
        V16     sv = {};
        int64_t j  = 0;
        for (; j + 16 <= nk; j += 16) {
            const V16 e = simd::exp_nonpos(simd::load16(pr + j) - m);
            simd::store16(pr + j, e);
            sv += e;
        }
        float sum = 0.0f;
        for (int t = 0; t < 16; ++t) sum += sv[t];
        for (; j < nk; ++j) sum += (pr[j] = expf(pr[j] - m));
        l[r] = sum;
        if (m_out) m_out[r] = m;
    }
}

DYLLM_CPU_CLONES void pv_block(const float* p, int64_t ld_p, int n, int64_t n_terms, const int32_t* cols,
                               int64_t col_base, CMatF src, int64_t row0, int64_t kv_off, int D, float* acc) {
    constexpr int W  = 16;  // output columns held in registers per pass
    const int     Dv = D / W * W;
    // Full 16-column chunks: 4 query rows x 16 columns of accumulators stay in registers across all terms.
    for (int c0 = 0; c0 < Dv; c0 += W) {
        int r = 0;
        for (; r + 4 <= n; r += 4) {
            V16 a0 = {}, a1 = {}, a2 = {}, a3 = {};
            for (int64_t t = 0; t < n_terms; ++t) {
                const int64_t j  = cols ? cols[t] - col_base : t;
                const V16     vr = *reinterpret_cast<const V16*>(src.row(row0 + t) + kv_off + c0);
                a0 += p[(r + 0) * ld_p + j] * vr;
                a1 += p[(r + 1) * ld_p + j] * vr;
                a2 += p[(r + 2) * ld_p + j] * vr;
                a3 += p[(r + 3) * ld_p + j] * vr;
            }
            *reinterpret_cast<V16*>(acc + (r + 0) * D + c0) = a0;
            *reinterpret_cast<V16*>(acc + (r + 1) * D + c0) = a1;
            *reinterpret_cast<V16*>(acc + (r + 2) * D + c0) = a2;
            *reinterpret_cast<V16*>(acc + (r + 3) * D + c0) = a3;
        }
        for (; r < n; ++r) {
            V16 a0 = {};
            for (int64_t t = 0; t < n_terms; ++t) {
                const int64_t j = cols ? cols[t] - col_base : t;
                a0 += p[r * ld_p + j] * *reinterpret_cast<const V16*>(src.row(row0 + t) + kv_off + c0);
            }
            *reinterpret_cast<V16*>(acc + r * D + c0) = a0;
        }
    }
    // Leftover columns (head_dim not a multiple of 16): plain loops.
    if (Dv < D) {
        for (int r = 0; r < n; ++r) {
            float* ar = acc + r * D;
            for (int c = Dv; c < D; ++c) ar[c] = 0.0f;
            for (int64_t t = 0; t < n_terms; ++t) {
                const int64_t j  = cols ? cols[t] - col_base : t;
                const float   w  = p[r * ld_p + j];
                const float*  vr = src.row(row0 + t) + kv_off;
                for (int c = Dv; c < D; ++c) ar[c] += w * vr[c];
            }
        }
    }
}

}  // namespace dyllm::cpu::detail
