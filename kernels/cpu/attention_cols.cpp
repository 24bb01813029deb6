// Optimised column-sparse approximate attention: per (row, head), the scores of the salient keys only, weighted by
// exp(score - lse). The incremental form keeps its sums scaled by exp(-M), M the running maximum of the shifted scores
// (the online-softmax rescaling), so a key whose score rose far above the cached lse cannot overflow.
#include "kernels/cpu/attention_cols.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <vector>

#include "kernels/cpu/ref/attention_cols.h"
#include "kernels/cpu/simd.h"

// 16-lane values only pass between always-inlined helpers here (see simd.h).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace dyllm::cpu {

namespace {

// Rows per task: a few rows amortise the hand-off; the work per row is |S| * n_head * 4-8 D FLOPs.
constexpr int64_t kRowsPerTask = 16;

// Both updates, for head dims that are whole 16-lane vectors above kColsLanesMaxHeadDim (smaller ones: cols_lanes)
// and at least kColsVectorMinKeys salient keys: the rows of a task that share a sequence go
// through the salient keys 16 at a time, in tiles of a few rows. A chunk's new and old keys (head slice) are
// transposed once for all those rows (kt[c * 16 + t]), so each score vector holds 16 keys of one row, summed over c
// in order from zero and then scaled, as every other attention kernel scores; the running maximum, the rescaling and
// the exps then go a chunk at a time (simd::exp_nonpos) instead of a key at a time (libm's expf, three per key), and
// the weighted values are added with vector FMAs over the head dim. The maths is the per-key loop's (the online
// rescaling from m = 0, now per chunk; the same fallback); the rounding differs (exps within ~2 ulp, the maximum
// taken a chunk ahead), inside the reference's tolerance. Figures: kernels/README.md "Attention".
// Rows per tile: 4 x 2 score vectors in registers with AVX-512; 2 elsewhere (a 16-lane value is two ymm there).
constexpr int kColsTileRows = 4, kColsTileRowsNarrow = 2;
// Head dims up to this go with the rows in the lanes (cols_lanes), whatever the number of salient keys; larger ones
// take the per-key loop (cols_rows) for one key and 16-key chunks (cols_rows_vec) for more, as cols_lanes's transposed
// queries and sums of 4 heads outgrow L1 there. bench_kernels_cpu --attention --queries 64, against the per-key loop
// and the chunks (kernels/README.md "Attention"): head dim 32 and 64 faster at 1, 3 and 10% of the keys salient, head
// dim 128 slower at 1 key and 10%.
constexpr int kColsLanesMaxHeadDim = 64;
// Fewer salient keys than this take the per-key loop (cols_rows) above kColsLanesMaxHeadDim: one key's 16-lane chunk
// scores 15 padding lanes too.
constexpr int64_t kColsVectorMinKeys = 2;
// Heads per pass of cols_lanes, and the scratch it needs: each head's transposed queries and its rows' sums.
constexpr int     kColsLanesHeads = 4;
constexpr int64_t cols_lanes_scratch(int head_dim) {
    return int64_t(2) * kColsLanesHeads * 16 * head_dim;
}
// Floats of scratch per task of the vector forms: cols_rows_vec's 32 * D for a chunk's keys and kRowsPerTask * D for
// the rows' sums, or cols_lanes's.
constexpr int64_t cols_vector_scratch(int head_dim) {
    return head_dim <= kColsLanesMaxHeadDim
               ? std::max<int64_t>((32 + kRowsPerTask) * head_dim, cols_lanes_scratch(head_dim))
               : (32 + kRowsPerTask) * head_dim;
}
constexpr int kStackIncHeadDim = 128;  // the vector forms' scratch is on the stack up to this head dim

using V16 = simd::V16;

// Per-row state of the incremental update, scaled by exp(-m) (m the running maximum of the shifted scores, from 0).
struct IncRow {
    float*       acc;  // [D]: c_old, then the new terms
    float        m = 0.0f, rest = 1.0f, z_new = 0.0f;
    float        z;  // the row's cached log-sum-exp
    const float* q;  // the row's query, this head
};

// The incremental update's end for one (row, head), from its sums scaled by exp(-m): c_new = acc / (rest + z_new)
// and the new log-sum-exp; or, when the unchanged keys kept less than kColsMinRestMass of the old mass, NaN and cn
// untouched (the caller leaves c_old there for an exact pass).
DYLLM_ALWAYS_INLINE float finish_incremental(const float* acc, float m, float rest, float z_new, float z, int D,
                                             float* cn) {
    const float scale_m = m == 0.0f ? 1.0f : std::exp(-m);          // m = 0 unless a score rose above the cached lse
    if (rest < float(ref::kColsMinRestMass) * scale_m) return NAN;  // mostly changed keys: recompute exactly
    const float zs = rest + z_new, inv = 1.0f / zs;
    for (int c = 0; c < D; ++c) cn[c] = acc[c] * inv;
    return z + m + std::log(zs);
}

// The end of the vector forms for rows i0 + [0, n) at head h: c_new and the new log-sum-exp from each row's sums
// (scaled by exp(-m)); a row without keys, or the incremental form's fallback, keeps c_old.
template <bool Inc>
DYLLM_ALWAYS_INLINE void finish_rows(const IncRow* rows, int n, CMatF c_old, MatF c_new, MatF lse_out, int64_t i0,
                                     int h, int D) {
    for (int r = 0; r < n; ++r) {
        const int64_t i  = i0 + r;
        const IncRow& st = rows[r];
        const float*  co = c_old.row(i) + int64_t(h) * D;
        float*        cn = c_new.row(i) + int64_t(h) * D;
        float         out_lse;
        if (!std::isfinite(st.z)) {  // no keys: the context stays (the sums above were on no real mass)
            if (co != cn) std::copy_n(co, D, cn);
            out_lse = st.z;
        } else if (!Inc) {
            const float f = st.m > 0.0f ? std::exp(st.m) : 1.0f;
            for (int c = 0; c < D; ++c) cn[c] = st.acc[c] * f;
            out_lse = st.z;
        } else {
            out_lse = finish_incremental(st.acc, st.m, st.rest, st.z_new, st.z, D, cn);
            if (std::isnan(out_lse) && co != cn) std::copy_n(co, D, cn);
        }
        if (lse_out.data) lse_out.row(i)[h] = out_lse;
    }
}

// One chunk of up to 16 salient keys [t0, t0 + nc) of the rows' sequence for the NR rows of a tile. Inc: the
// incremental form (old keys' terms out, new ones in); else the plain one (the new keys' terms added).
template <int NR, bool Inc>
DYLLM_ALWAYS_INLINE void cols_chunk(IncRow* rows, const float* ktn, const float* kto, int64_t t0, int nc, int D,
                                    float scale, CMatF dv, CMatF v_old, int64_t kv_off) {
    V16 an[NR] = {}, ao[NR] = {};
    for (int c = 0; c < D; ++c) {
        const V16 kn = simd::load16(ktn + c * 16);
        const V16 ko = Inc ? simd::load16(kto + c * 16) : V16{};
#pragma GCC unroll 4
        for (int r = 0; r < NR; ++r) {
            const float x = rows[r].q[c];
            an[r] += x * kn;
            if constexpr (Inc) ao[r] += x * ko;
        }
    }
    alignas(64) static constexpr float kLane[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const V16 valid = simd::load16(kLane) < float(nc) ? V16{} + 1.0f : V16{};  // 1 on the chunk's keys, 0 padding
    for (int r = 0; r < NR; ++r) {
        IncRow&   st = rows[r];
        const V16 sn = an[r] * scale - st.z, so = Inc ? ao[r] * scale - st.z : sn;
        float     mc = st.m;
        for (int t = 0; t < nc; ++t) mc = std::max(mc, std::max(sn[t], so[t]));
        if (mc > st.m) {
            const float f = std::exp(st.m - mc);
            for (int c = 0; c < D; c += 16) simd::store16(st.acc + c, simd::load16(st.acc + c) * f);
            st.rest *= f;
            st.z_new *= f;
            st.m = mc;
        }
        // Every real key's shifted score is <= 0 (m is their maximum); a padding lane's is held at 0, then zeroed.
        const V16 xn = sn - st.m;
        const V16 p  = simd::exp_nonpos(xn < 0.0f ? xn : V16{}) * valid;
        if constexpr (!Inc) {
            for (int t = 0; t < nc; ++t) {
                const float* dr = dv.row(t0 + t) + kv_off;
                for (int c = 0; c < D; c += 16)
                    simd::store16(st.acc + c, simd::load16(st.acc + c) + p[t] * simd::load16(dr + c));
            }
            continue;
        }
        const V16 xo = so - st.m;
        const V16 po = simd::exp_nonpos(xo < 0.0f ? xo : V16{}) * valid;
        for (int t = 0; t < nc; ++t) {
            st.rest -= po[t];
            st.z_new += p[t];
        }
        const V16 w = p - po;
        for (int t = 0; t < nc; ++t) {
            const float* vo = v_old.row(t0 + t) + kv_off;
            const float* dr = dv.row(t0 + t) + kv_off;
            for (int c = 0; c < D; c += 16)
                simd::store16(st.acc + c,
                              simd::load16(st.acc + c) + w[t] * simd::load16(vo + c) + p[t] * simd::load16(dr + c));
        }
    }
}

// The update of rows [i0, i1) (at most kRowsPerTask rows of one sequence, whose salient keys [s0, s1) are not
// empty) at head h, incremental or plain. The plain form's sums are scaled by exp(-m) too (a new key may score above
// the cached log-sum-exp, where its weight exceeds 1), and scaled back at the end. scratch: 32 * D floats for a chunk's
// transposed keys, then kRowsPerTask * D for the rows' sums. Each chunk is transposed once for all the rows. A short
// chunk's padding lanes keep what they held (zeros from cols_task, or an earlier chunk's keys): finite scores, masked
// out of every sum.
template <bool Inc>
DYLLM_ALWAYS_INLINE void cols_rows_vec(CMatF q, CMatF k, CMatF dv, const int32_t* sal_k, int64_t s0, int64_t s1,
                                       CMatF lse, CMatF c_old, AttnDims dims, MatF c_new, CMatF k_old, CMatF v_old,
                                       MatF lse_out, int64_t i0, int64_t i1, int h, float* scratch) {
    const int     D      = dims.head_dim;
    const int64_t kv_off = int64_t(h / (dims.n_head / dims.n_kv_head)) * D;
    const float   scale  = 1.0f / std::sqrt(float(D));
    const int     n      = int(i1 - i0);
    float*        ktn    = scratch;
    float*        kto    = scratch + 16 * D;
    IncRow        rows[kRowsPerTask];
    for (int r = 0; r < n; ++r) {
        rows[r].acc = scratch + (32 + r) * D;
        rows[r].z   = lse.row(i0 + r)[h];
        rows[r].q   = q.row(i0 + r) + int64_t(h) * D;
        std::copy_n(c_old.row(i0 + r) + int64_t(h) * D, D, rows[r].acc);
    }
    for (int64_t t0 = s0; t0 < s1; t0 += 16) {
        const int nc = int(std::min<int64_t>(16, s1 - t0));
        for (int t = 0; t < nc; ++t) {
            const float* kn = k.row(sal_k[t0 + t]) + kv_off;
            for (int c = 0; c < D; ++c) ktn[c * 16 + t] = kn[c];
            if constexpr (Inc) {
                const float* ko = k_old.row(t0 + t) + kv_off;
                for (int c = 0; c < D; ++c) kto[c * 16 + t] = ko[c];
            }
        }
        int r0 = 0;
        if (simd::wide_registers())
            for (; r0 + kColsTileRows <= n; r0 += kColsTileRows)
                cols_chunk<kColsTileRows, Inc>(rows + r0, ktn, kto, t0, nc, D, scale, dv, v_old, kv_off);
        for (; r0 + kColsTileRowsNarrow <= n; r0 += kColsTileRowsNarrow)
            cols_chunk<kColsTileRowsNarrow, Inc>(rows + r0, ktn, kto, t0, nc, D, scale, dv, v_old, kv_off);
        for (; r0 < n; ++r0) cols_chunk<1, Inc>(rows + r0, ktn, kto, t0, nc, D, scale, dv, v_old, kv_off);
    }
    finish_rows<Inc>(rows, n, c_old, c_new, lse_out, i0, h, D);
}

// Both updates for head dims that are whole 16-lane vectors, up to kColsLanesMaxHeadDim:
// the n <= 16 rows i0 + [0, n) of one sequence go in the lanes of one vector, their queries transposed once
// (qt[c * 16 + r]), so each key's score vector holds 16 rows, summed over c in order from zero and then scaled, as
// every other attention kernel scores; the rescaling state and the exps are vectors over the rows, and each row adds
// its weighted values with vector FMAs over the head dim. G heads h0 + [0, G) go together: one head's score is a
// chain of D dependent FMAs, G heads' chains overlap. The per-key loop (cols_rows) took two dot products ending in a
// horizontal sum, three libm exps and the rescaling per (row, key). The maths is the per-key loop's (the running
// maximum updated key by key); while no score rises above the cached log-sum-exp (no rescaling) the same operations
// as cols_chunk's, so the same bits (bench_kernels_cpu's hashes agree at 3 and 34 keys).
// Padding lanes (rows n..15) and rows whose cached log-sum-exp is not finite score against z = 0 and are never
// written. scratch: cols_lanes_scratch(D) floats (each head's qt, then the rows' sums).
template <bool Inc, int G>
DYLLM_ALWAYS_INLINE void cols_lanes(CMatF q, CMatF k, CMatF dv, const int32_t* sal_k, int64_t s0, int64_t s1, CMatF lse,
                                    CMatF c_old, AttnDims dims, MatF c_new, CMatF k_old, CMatF v_old, MatF lse_out,
                                    int64_t i0, int64_t i1, int h0, float* scratch) {
    const int   D     = dims.head_dim;
    const int   group = dims.n_head / dims.n_kv_head;
    const float scale = 1.0f / std::sqrt(float(D));
    const int   n     = int(i1 - i0);
    int64_t     kv_off[G];
    float*      qt[G];
    IncRow      rows[G][16];
    V16         z[G] = {};
    for (int g = 0; g < G; ++g) {
        const int h      = h0 + g;
        kv_off[g]        = int64_t(h / group) * D;
        qt[g]            = scratch + int64_t(g) * 16 * D;
        const auto query = [&](int r) { return q.row(i0 + r) + int64_t(h) * D; };
        if (simd::wide_registers())  // 16 x 16 blocks through registers; 8 x 8 without AVX-512 (32 ymm otherwise)
            simd::transpose_rows<16>(query, n, D, 16, qt[g]);
        else
            simd::transpose_rows<8>(query, n, D, 16, qt[g]);
        for (int r = 0; r < n; ++r) {
            IncRow& st = rows[g][r];
            st.acc     = scratch + (int64_t(G) * 16 + int64_t(g) * 16 + r) * D;
            st.z       = lse.row(i0 + r)[h];
            z[g][r]    = std::isfinite(st.z) ? st.z : 0.0f;
            std::copy_n(c_old.row(i0 + r) + int64_t(h) * D, D, st.acc);
        }
    }
    V16 m[G] = {}, rest[G], z_new[G] = {};
    for (int g = 0; g < G; ++g) rest[g] = V16{} + 1.0f;
    for (int64_t t = s0; t < s1; ++t) {
        V16 an[G] = {}, ao[G] = {};
        for (int c = 0; c < D; ++c) {
#pragma GCC unroll 4
            for (int g = 0; g < G; ++g) {
                const V16 qc = simd::load16(qt[g] + c * 16);
                an[g] += k.row(sal_k[t])[kv_off[g] + c] * qc;
                if constexpr (Inc) ao[g] += k_old.row(t)[kv_off[g] + c] * qc;
            }
        }
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
            const V16 sn = an[g] * scale - z[g], so = Inc ? ao[g] * scale - z[g] : sn;
            const V16 mx   = sn > so ? sn : so;
            const V16 mc   = mx > m[g] ? mx : m[g];
            bool      grew = false;
            for (int r = 0; r < 16; ++r) grew |= mc[r] > m[g][r];
            if (grew)  // a score above the cached log-sum-exp: rescale that row's sums, a scalar exp as cols_chunk
                for (int r = 0; r < n; ++r)
                    if (mc[r] > m[g][r]) {
                        const float f   = std::exp(m[g][r] - mc[r]);
                        float*      acc = rows[g][r].acc;
                        for (int c = 0; c < D; c += 16) simd::store16(acc + c, simd::load16(acc + c) * f);
                        rest[g][r] *= f;
                        z_new[g][r] *= f;
                    }
            m[g]            = mc;
            const V16    p  = simd::exp_nonpos(sn - m[g]);  // <= 0: m is at least every score so far
            const float* dr = dv.row(t) + kv_off[g];
            if constexpr (!Inc) {
                for (int c = 0; c < D; c += 16) {  // each value vector loaded once for all the rows
                    const V16 d16 = simd::load16(dr + c);
                    for (int r = 0; r < n; ++r)
                        simd::store16(rows[g][r].acc + c, simd::load16(rows[g][r].acc + c) + p[r] * d16);
                }
                continue;
            }
            const V16 po = simd::exp_nonpos(so - m[g]);
            rest[g] -= po;
            z_new[g] += p;
            const V16    w  = p - po;
            const float* vo = v_old.row(t) + kv_off[g];
            for (int c = 0; c < D; c += 16) {
                const V16 o16 = simd::load16(vo + c), d16 = simd::load16(dr + c);
                for (int r = 0; r < n; ++r)
                    simd::store16(rows[g][r].acc + c, simd::load16(rows[g][r].acc + c) + w[r] * o16 + p[r] * d16);
            }
        }
    }
    for (int g = 0; g < G; ++g) {
        for (int r = 0; r < n; ++r) {
            rows[g][r].m     = m[g][r];
            rows[g][r].rest  = rest[g][r];
            rows[g][r].z_new = z_new[g][r];
        }
        finish_rows<Inc>(rows[g], n, c_old, c_new, lse_out, i0, h0 + g, D);
    }
}

// cols_lanes over every head, 4 at a time.
template <bool Inc>
DYLLM_ALWAYS_INLINE void cols_lanes_heads(CMatF q, CMatF k, CMatF dv, const int32_t* sal_k, int64_t s0, int64_t s1,
                                          CMatF lse, CMatF c_old, AttnDims dims, MatF c_new, CMatF k_old, CMatF v_old,
                                          MatF lse_out, int64_t i0, int64_t i1, float* scratch) {
    for (int h0 = 0; h0 < dims.n_head; h0 += kColsLanesHeads) {
        switch (std::min(kColsLanesHeads, dims.n_head - h0)) {
            case 1:
                cols_lanes<Inc, 1>(q, k, dv, sal_k, s0, s1, lse, c_old, dims, c_new, k_old, v_old, lse_out, i0, i1, h0,
                                   scratch);
                break;
            case 2:
                cols_lanes<Inc, 2>(q, k, dv, sal_k, s0, s1, lse, c_old, dims, c_new, k_old, v_old, lse_out, i0, i1, h0,
                                   scratch);
                break;
            case 3:
                cols_lanes<Inc, 3>(q, k, dv, sal_k, s0, s1, lse, c_old, dims, c_new, k_old, v_old, lse_out, i0, i1, h0,
                                   scratch);
                break;
            default:
                cols_lanes<Inc, 4>(q, k, dv, sal_k, s0, s1, lse, c_old, dims, c_new, k_old, v_old, lse_out, i0, i1, h0,
                                   scratch);
                break;
        }
    }
}

DYLLM_CPU_CLONES void cols_rows(CMatF q, const int32_t* q_seq, CMatF k, CMatF dv, const int32_t* sal_k,
                                const int32_t* cu_sal, CMatF lse, CMatF c_old, AttnDims dims, MatF c_new, CMatF k_old,
                                CMatF v_old, MatF lse_out, int64_t i0, int64_t i1, float* scratch) {
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
                        rest *= r;
                        z_new *= r;
                        m = m_new;
                    }
                    const float  p = std::exp(s_new - m), p_old = std::exp(s_old - m);
                    const float* vo = v_old.row(t) + kv_off;
                    const float* dr = dv.row(t) + kv_off;
                    rest -= p_old;
                    z_new += p;
                    for (int c = 0; c < D; ++c) acc[c] += (p - p_old) * vo[c] + p * dr[c];
                }
                out_lse = finish_incremental(acc, m, rest, z_new, z, D, cn);  // cn holds c_old on a fallback
            }
            if (lse_out.data) lse_out.row(i)[h] = out_lse;
        }
    }
}

// The vector update of rows [i0, i1): per head, each run of rows in one sequence.
DYLLM_CPU_CLONES void cols_task(CMatF q, const int32_t* q_seq, CMatF k, CMatF dv, const int32_t* sal_k,
                                const int32_t* cu_sal, CMatF lse, CMatF c_old, AttnDims dims, MatF c_new, CMatF k_old,
                                CMatF v_old, MatF lse_out, int64_t i0, int64_t i1, float* scratch) {
    for (int64_t r0 = i0; r0 < i1;) {
        const int b  = q_seq[r0];
        int64_t   r1 = r0 + 1;
        while (r1 < i1 && q_seq[r1] == b) ++r1;
        const int64_t n_sal = cu_sal[b + 1] - cu_sal[b];
        if (n_sal == 0) {  // every row keeps its context
            cols_rows(q, q_seq, k, dv, sal_k, cu_sal, lse, c_old, dims, c_new, k_old, v_old, lse_out, r0, r1,
                      scratch + 32 * dims.head_dim);
        } else if (dims.head_dim <= kColsLanesMaxHeadDim) {
            if (k_old.data)
                cols_lanes_heads<true>(q, k, dv, sal_k, cu_sal[b], cu_sal[b + 1], lse, c_old, dims, c_new, k_old, v_old,
                                       lse_out, r0, r1, scratch);
            else
                cols_lanes_heads<false>(q, k, dv, sal_k, cu_sal[b], cu_sal[b + 1], lse, c_old, dims, c_new, k_old,
                                        v_old, lse_out, r0, r1, scratch);
        } else if (n_sal < kColsVectorMinKeys) {
            cols_rows(q, q_seq, k, dv, sal_k, cu_sal, lse, c_old, dims, c_new, k_old, v_old, lse_out, r0, r1, scratch);
        } else if (k_old.data) {
            std::fill_n(scratch, 32 * dims.head_dim, 0.0f);  // the transposed chunks' padding lanes (cols_rows_vec)
            for (int h = 0; h < dims.n_head; ++h)
                cols_rows_vec<true>(q, k, dv, sal_k, cu_sal[b], cu_sal[b + 1], lse, c_old, dims, c_new, k_old, v_old,
                                    lse_out, r0, r1, h, scratch);
        } else {
            std::fill_n(scratch, 32 * dims.head_dim, 0.0f);
            for (int h = 0; h < dims.n_head; ++h)
                cols_rows_vec<false>(q, k, dv, sal_k, cu_sal[b], cu_sal[b + 1], lse, c_old, dims, c_new, k_old, v_old,
                                     lse_out, r0, r1, h, scratch);
        }
        r0 = r1;
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
    const bool vector = dims.head_dim % 16 == 0;
    pool.parallel_for(n_tasks, work, [&](int64_t task, int) {
        // Scratch on the stack for every head size the models use (no allocation in the step loop), on the heap
        // beyond: one head_dim accumulator, or the vector form's transposed chunk and row sums.
        const int64_t need = vector ? cols_vector_scratch(dims.head_dim) : dims.head_dim;
        float stack_scratch[std::max(cols_vector_scratch(kStackIncHeadDim), cols_vector_scratch(kColsLanesMaxHeadDim))];
        std::vector<float> heap_scratch(need > int64_t(std::size(stack_scratch)) ? size_t(need) : 0);
        float*             scratch = heap_scratch.empty() ? stack_scratch : heap_scratch.data();
        const int64_t      i0 = task * kRowsPerTask, i1 = std::min(q.rows, i0 + kRowsPerTask);
        if (vector)
            cols_task(q, q_seq, k, dv, sal_k, cu_sal, lse, c_old, dims, c_new, k_old, v_old, lse_out, i0, i1, scratch);
        else
            cols_rows(q, q_seq, k, dv, sal_k, cu_sal, lse, c_old, dims, c_new, k_old, v_old, lse_out, i0, i1, scratch);
    });
}

}  // namespace dyllm::cpu
