// Column-sparse approximate attention: one warp per (query row, head); lane j owns output columns j + 32 c; each
// salient key's score is a warp reduction. The incremental form keeps its sums scaled by exp(-m), m the running
// maximum of the shifted scores (online-softmax rescaling), as the CPU kernel does.
#include <cmath>

#include "kernels/cuda/attention_cols.cuh"
#include "kernels/cuda/device_util.cuh"

namespace dyllm::cuda {

constexpr int   kColsWarps       = 4;      // (row, head) units per block
constexpr int   kColsMaxChunks   = 8;      // head_dim <= 256
constexpr float kColsMinRestMass = 1e-3f;  // kernels/cpu/ref/attention_cols.h

struct ColsArgs {
    Mat            q, k, dv, lse, c_old, c_new, k_old, v_old, lse_out;
    const int32_t* q_seq  = nullptr;
    const int32_t* sal_k  = nullptr;
    const int32_t* cu_sal = nullptr;
    AttnDims       dims;
    float          scale = 1.0f;
};

// The warp's dot product of its pre-scaled query chunk with row r of m (columns kv0 ..).
__device__ __forceinline__ float warp_dot(const float (&qv)[kColsMaxChunks], const Mat& m, int64_t r, int64_t kv0,
                                          int D, int lane) {
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < kColsMaxChunks; ++c) {
        const int d = lane + 32 * c;
        if (d < D) s += qv[c] * mat_load(m, r, kv0 + d);
    }
    return warp_sum(s);
}

static __global__ void __launch_bounds__(kColsWarps * 32) attention_cols_kernel(ColsArgs a) {
    const int64_t unit = int64_t(blockIdx.x) * kColsWarps + (threadIdx.x >> 5);
    const int     lane = threadIdx.x & 31;
    if (unit >= a.q.rows * a.dims.n_head) return;  // warp-uniform
    const int64_t i = unit / a.dims.n_head;
    const int     h = int(unit % a.dims.n_head), D = a.dims.head_dim;
    const int64_t q0 = int64_t(h) * D, kv0 = int64_t(h / (a.dims.n_head / a.dims.n_kv_head)) * D;
    const float   z   = mat_load(a.lse, i, h);
    const bool    inc = a.k_old.data != nullptr;
    float         qv[kColsMaxChunks], o[kColsMaxChunks];
#pragma unroll
    for (int c = 0; c < kColsMaxChunks; ++c) {
        const int d = lane + 32 * c;
        qv[c]       = d < D ? mat_load(a.q, i, q0 + d) * a.scale : 0.0f;
        o[c]        = d < D ? mat_load(a.c_old, i, q0 + d) : 0.0f;
    }
    float out_lse = z;
    bool  write   = true;
    if (isfinite(z)) {  // -inf: the row had no keys at its last exact attention; its context stays
        const int b = a.q_seq[i];
        float     m = 0.0f, rest = 1.0f, z_new = 0.0f;
        for (int t = a.cu_sal[b]; t < a.cu_sal[b + 1]; ++t) {
            const float s_new = warp_dot(qv, a.k, a.sal_k[t], kv0, D, lane) - z;
            if (!inc) {
                const float p = expf(s_new);
#pragma unroll
                for (int c = 0; c < kColsMaxChunks; ++c) {
                    const int d = lane + 32 * c;
                    if (d < D) o[c] += p * mat_load(a.dv, t, kv0 + d);
                }
                continue;
            }
            const float s_old = warp_dot(qv, a.k_old, t, kv0, D, lane) - z;
            const float m_new = fmaxf(m, fmaxf(s_new, s_old));
            if (m_new > m) {
                const float r = expf(m - m_new);
#pragma unroll
                for (int c = 0; c < kColsMaxChunks; ++c) o[c] *= r;
                rest *= r;
                z_new *= r;
                m = m_new;
            }
            const float p = expf(s_new - m), p_old = expf(s_old - m);
            rest -= p_old;
            z_new += p;
#pragma unroll
            for (int c = 0; c < kColsMaxChunks; ++c) {
                const int d = lane + 32 * c;
                if (d < D) {
                    const float vo = mat_load(a.v_old, t, kv0 + d);
                    o[c] += (p - p_old) * vo + p * mat_load(a.dv, t, kv0 + d);
                }
            }
        }
        if (inc && a.cu_sal[b] < a.cu_sal[b + 1]) {
            if (rest < kColsMinRestMass * expf(-m)) {  // mostly changed keys: the caller recomputes this row exactly
                out_lse = NAN;
                write   = false;
            } else {
                const float zs = rest + z_new, inv = 1.0f / zs;
#pragma unroll
                for (int c = 0; c < kColsMaxChunks; ++c) o[c] *= inv;
                out_lse = z + m + logf(zs);
            }
        }
    }
    if (a.lse_out.data && lane == 0) mat_store(a.lse_out, i, h, out_lse);
    if (!write && a.c_new.data == a.c_old.data) return;  // in place: c_old stays as it is
#pragma unroll
    for (int c = 0; c < kColsMaxChunks; ++c) {
        const int d = lane + 32 * c;
        if (d < D) mat_store(a.c_new, i, q0 + d, write ? o[c] : mat_load(a.c_old, i, q0 + d));
    }
}

cudaError_t attention_cols(const Mat& q, const int32_t* q_seq, const Mat& k, const Mat& dv, const int32_t* sal_k,
                           const int32_t* cu_sal, const Mat& lse, const Mat& c_old, AttnDims dims, const Mat& c_new,
                           const Mat& k_old, const Mat& v_old, const Mat& lse_out, cudaStream_t stream) {
    if (dims.head_dim < 1 || dims.head_dim > 32 * kColsMaxChunks || dims.n_kv_head < 1 ||
        dims.n_head % dims.n_kv_head != 0)
        return cudaErrorInvalidValue;
    const int64_t units = q.rows * dims.n_head;
    if (units == 0) return cudaSuccess;
    const ColsArgs a{
        .q       = q,
        .k       = k,
        .dv      = dv,
        .lse     = lse,
        .c_old   = c_old,
        .c_new   = c_new,
        .k_old   = k_old,
        .v_old   = v_old,
        .lse_out = lse_out,
        .q_seq   = q_seq,
        .sal_k   = sal_k,
        .cu_sal  = cu_sal,
        .dims    = dims,
        .scale   = 1.0f / sqrtf(float(dims.head_dim)),
    };
    const unsigned blocks = unsigned((units + kColsWarps - 1) / kColsWarps);
    attention_cols_kernel<<<blocks, kColsWarps * 32, 0, stream>>>(a);
    return cudaGetLastError();
}

}  // namespace dyllm::cuda
