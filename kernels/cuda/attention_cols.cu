// Column-sparse approximate attention: one warp per (query row, head); lane j owns output columns j + 32 c; each
// salient key's score is a warp reduction, its weight exp(score - lse) scales that key's dV row into the accumulator.
#include <cmath>

#include "kernels/cuda/attention_cols.cuh"
#include "kernels/cuda/device_util.cuh"

namespace dyllm::cuda {

constexpr int kColsWarps     = 4;  // (row, head) units per block
constexpr int kColsMaxChunks = 8;  // head_dim <= 256

static __global__ void __launch_bounds__(kColsWarps * 32)
    attention_cols_kernel(Mat q, const int32_t* q_seq, Mat k, Mat dv, const int32_t* sal_k, const int32_t* cu_sal,
                          Mat lse, Mat c_old, AttnDims dims, Mat c_new, float scale) {
    const int64_t unit = int64_t(blockIdx.x) * kColsWarps + (threadIdx.x >> 5);
    const int     lane = threadIdx.x & 31;
    if (unit >= q.rows * dims.n_head) return;  // warp-uniform
    const int64_t i = unit / dims.n_head;
    const int     h = int(unit % dims.n_head), D = dims.head_dim;
    const int64_t q0 = int64_t(h) * D, kv0 = int64_t(h / (dims.n_head / dims.n_kv_head)) * D;
    const float   z  = mat_load(lse, i, h);
    float         qv[kColsMaxChunks], o[kColsMaxChunks];
#pragma unroll
    for (int c = 0; c < kColsMaxChunks; ++c) {
        const int d = lane + 32 * c;
        qv[c]       = d < D ? mat_load(q, i, q0 + d) * scale : 0.0f;
        o[c]        = 0.0f;
    }
    if (isfinite(z)) {  // -inf: the row had no keys at its last exact attention; its context stays
        const int b = q_seq[i];
        for (int t = cu_sal[b]; t < cu_sal[b + 1]; ++t) {
            const int64_t j = sal_k[t];
            float         s = 0.0f;
#pragma unroll
            for (int c = 0; c < kColsMaxChunks; ++c) {
                const int d = lane + 32 * c;
                if (d < D) s += qv[c] * mat_load(k, j, kv0 + d);
            }
            const float p = expf(warp_sum(s) - z);
#pragma unroll
            for (int c = 0; c < kColsMaxChunks; ++c) {
                const int d = lane + 32 * c;
                if (d < D) o[c] += p * mat_load(dv, t, kv0 + d);
            }
        }
    }
#pragma unroll
    for (int c = 0; c < kColsMaxChunks; ++c) {
        const int d = lane + 32 * c;
        if (d < D) mat_store(c_new, i, q0 + d, mat_load(c_old, i, q0 + d) + o[c]);
    }
}

cudaError_t attention_cols(const Mat& q, const int32_t* q_seq, const Mat& k, const Mat& dv, const int32_t* sal_k,
                           const int32_t* cu_sal, const Mat& lse, const Mat& c_old, AttnDims dims, const Mat& c_new,
                           cudaStream_t stream) {
    if (dims.head_dim < 1 || dims.head_dim > 32 * kColsMaxChunks || dims.n_kv_head < 1 ||
        dims.n_head % dims.n_kv_head != 0)
        return cudaErrorInvalidValue;
    const int64_t units = q.rows * dims.n_head;
    if (units == 0) return cudaSuccess;
    const unsigned blocks = unsigned((units + kColsWarps - 1) / kColsWarps);
    attention_cols_kernel<<<blocks, kColsWarps * 32, 0, stream>>>(q, q_seq, k, dv, sal_k, cu_sal, lse, c_old, dims,
                                                                  c_new, 1.0f / sqrtf(float(dims.head_dim)));
    return cudaGetLastError();
}

}  // namespace dyllm::cuda
