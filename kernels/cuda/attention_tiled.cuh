// Device body shared by the exact (attention.cu) and the column-sparse approximate (attention_approx.cu) attention
// kernels: fp32 SIMT tiles with an online softmax over every key of the query's sequence (Milakov & Gimelshein's
// update from kernels/common/softmax_math.h). Include only from .cu files.
//
// Work split: one CTA per (query tile, KV head, head chunk). A query tile is a run of rows of one sequence; the CTA's
// "units" are its (row, query head) pairs sharing the KV head, at most kAttnUnits, kUnitsPerWarp per warp. Keys come
// in 64-key tiles through shared memory (fp32, rows padded to D + 1 floats so lane j reading key row j is bank-conflict
// free). Lane j scores keys j and j + 32 for each unit; each lane owns output columns lane + 32 c.
#pragma once
#include "kernels/common/attention_approx_math.h"
#include "kernels/common/softmax_math.h"
#include "kernels/cuda/device_util.cuh"

namespace dyllm::cuda {

constexpr int kAttnWarps    = 4;
constexpr int kUnitsPerWarp = 4;
constexpr int kAttnUnits    = kAttnWarps * kUnitsPerWarp;  // (row, head) pairs per CTA
static_assert(kAttnUnits == kAttnUnitsPerCta, "the host plan (kernels/common) and the kernel agree on CTA units");
constexpr int kMaxDimChunks = 8;  // head_dim <= 256
constexpr int kMaxHeadDim   = 32 * kMaxDimChunks;

struct AttnArgs {
    Mat              q;      // [nq, H_q * D]
    Mat              k;      // [nk, H_kv * D]
    Mat              v;      // exact: V [nk, H_kv * D]; approx: dV [ns, H_kv * D] (rows of the salient keys)
    Mat              c_old;  // approx: [nq, H_q * D]
    Mat              out;    // [nq, H_q * D]
    AttnDims         dims;
    const QueryTile* tiles         = nullptr;
    const int32_t*   cu_k          = nullptr;  // [B + 1]
    int              heads_per_cta = 1;
    int              n_head_chunks = 1;
    float            scale         = 1.0f;     // 1 / sqrt(D), folded into q
    const uint64_t*  key_mask      = nullptr;  // approx: [n_key_tiles]
    const int32_t*   key_base      = nullptr;  // approx: [n_key_tiles]
    const int32_t*   tile_off      = nullptr;  // approx: [B + 1]
    float*           stats         = nullptr;  // approx, optional: [nq, 3] (dot, |new|^2, |old|^2), zeroed by caller
    Mat              lse;                      // exact, optional (data null: none): [nq, n_head] F32 log-sum-exp
};

inline size_t attention_smem_bytes(int head_dim) {
    return (size_t(kAttnUnits) * head_dim + size_t(kKeyTile) * (head_dim + 1)) * sizeof(float);
}

// Query heads per CTA and query rows per tile for these dims (the host plans the tiles with the row count).
inline int attention_heads_per_cta(const AttnDims& d) {
    return ::dyllm::attention_heads_per_cta(d.n_head, d.n_kv_head);
}
inline int attention_rows_per_tile(const AttnDims& d) {
    return ::dyllm::attention_rows_per_tile(d.n_head, d.n_kv_head);
}

// Loads rows [row0, row0 + n) of m, columns [col0, col0 + D), widened to fp32, into kv[r * (D + 1) + c].
__device__ __forceinline__ void load_kv_rows(float* kv, const Mat& m, int64_t row0, int n, int64_t col0, int D) {
    for (int idx = threadIdx.x; idx < n * D; idx += blockDim.x) {
        const int r = idx / D, c = idx % D;
        kv[r * (D + 1) + c] = mat_load(m, row0 + r, col0 + c);
    }
}

template <bool kApprox>
__device__ __forceinline__ void attention_tiled_body(const AttnArgs& a) {
    extern __shared__ float smem[];
    const int               D  = a.dims.head_dim;
    const int               Dp = D + 1;
    float*                  qs = smem;                   // [kAttnUnits][D], pre-scaled queries
    float*                  kv = smem + kAttnUnits * D;  // [kKeyTile][D + 1]: K, then V or the tile's salient dV rows

    const QueryTile tile  = a.tiles[blockIdx.x];
    const int       group = a.dims.n_head / a.dims.n_kv_head;
    const int       kvh   = int(blockIdx.y) / a.n_head_chunks;
    const int       h0    = kvh * group + (int(blockIdx.y) % a.n_head_chunks) * a.heads_per_cta;
    const int       h_end = min(h0 + a.heads_per_cta, (kvh + 1) * group);
    const int       nh    = h_end - h0;
    const int       units = tile.n_rows * nh;  // <= kAttnUnits by the host's plan
    const int       lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t   kv_col0 = int64_t(kvh) * D;

    for (int idx = threadIdx.x; idx < units * D; idx += blockDim.x) {
        const int u = idx / D, c = idx % D;
        qs[idx] = mat_load(a.q, tile.row0 + u / nh, int64_t(h0 + u % nh) * D + c) * a.scale;
    }

    float m[kUnitsPerWarp], l[kUnitsPerWarp], o[kUnitsPerWarp][kMaxDimChunks];
#pragma unroll
    for (int uu = 0; uu < kUnitsPerWarp; ++uu) {
        m[uu] = -INFINITY;
        l[uu] = 0.0f;
#pragma unroll
        for (int c = 0; c < kMaxDimChunks; ++c) o[uu][c] = 0.0f;
    }

    const int64_t k0 = a.cu_k[tile.seq];
    const int     nk = int(a.cu_k[tile.seq + 1] - k0);
    for (int t0 = 0; t0 < nk; t0 += kKeyTile) {
        const int nt = min(kKeyTile, nk - t0);
        __syncthreads();  // the previous tile's kv reads are done (and the q stores are visible)
        load_kv_rows(kv, a.k, k0 + t0, nt, kv_col0, D);
        __syncthreads();

        // Scores of keys lane and lane + 32 (-inf past the sequence end), online-softmax update per unit.
        float p[kUnitsPerWarp][2];
#pragma unroll
        for (int uu = 0; uu < kUnitsPerWarp; ++uu) {
            p[uu][0] = p[uu][1] = 0.0f;
            const int u         = warp + kAttnWarps * uu;
            if (u >= units) continue;  // warp-uniform
            const float* qu = qs + u * D;
            float        s0 = -INFINITY, s1 = -INFINITY;
            if (lane < nt) {
                float acc = 0.0f;
                for (int c = 0; c < D; ++c) acc += qu[c] * kv[lane * Dp + c];
                s0 = acc;
            }
            if (lane + 32 < nt) {
                float acc = 0.0f;
                for (int c = 0; c < D; ++c) acc += qu[c] * kv[(lane + 32) * Dp + c];
                s1 = acc;
            }
            const float m_new = fmaxf(m[uu], warp_max(fmaxf(s0, s1)));
            const float resc  = online_softmax_rescale(m[uu], m_new);
            const float p0    = s0 == -INFINITY ? 0.0f : expf(s0 - m_new);
            const float p1    = s1 == -INFINITY ? 0.0f : expf(s1 - m_new);
            l[uu]             = l[uu] * resc + warp_sum(p0 + p1);
            m[uu]             = m_new;
#pragma unroll
            for (int c = 0; c < kMaxDimChunks; ++c) o[uu][c] *= resc;
            p[uu][0] = p0;
            p[uu][1] = p1;
        }

        if constexpr (!kApprox) {
            __syncthreads();
            load_kv_rows(kv, a.v, k0 + t0, nt, kv_col0, D);
            __syncthreads();
#pragma unroll
            for (int uu = 0; uu < kUnitsPerWarp; ++uu) {
                const int u = warp + kAttnWarps * uu;
                if (u >= units) continue;
                for (int j = 0; j < nt; ++j) {
                    const float pj = __shfl_sync(0xffffffffu, j < 32 ? p[uu][0] : p[uu][1], j & 31);
#pragma unroll
                    for (int c = 0; c < kMaxDimChunks; ++c) {
                        const int d = lane + 32 * c;
                        if (d < D) o[uu][c] += pj * kv[j * Dp + d];
                    }
                }
            }
        } else {
            // Column-sparse P x dV: only the tile's salient keys (kernels/README.md §b.1 step 3); tiles without any are
            // skipped.
            const int      kt   = a.tile_off[tile.seq] + t0 / kKeyTile;
            const uint64_t mask = a.key_mask[kt];
            if (mask == 0) continue;  // CTA-uniform
            const int ns = popcount64(mask);
            __syncthreads();
            load_kv_rows(kv, a.v, a.key_base[kt], ns, kv_col0, D);  // salient dV rows are consecutive
            __syncthreads();
#pragma unroll
            for (int uu = 0; uu < kUnitsPerWarp; ++uu) {
                const int u = warp + kAttnWarps * uu;
                if (u >= units) continue;
                uint64_t bits = mask;
                for (int r = 0; bits != 0; ++r) {
                    const int j = __ffsll((long long)bits) - 1;
                    bits &= bits - 1;
                    const float pj = __shfl_sync(0xffffffffu, j < 32 ? p[uu][0] : p[uu][1], j & 31);
#pragma unroll
                    for (int c = 0; c < kMaxDimChunks; ++c) {
                        const int d = lane + 32 * c;
                        if (d < D) o[uu][c] += pj * kv[r * Dp + d];
                    }
                }
            }
        }
    }

    // Epilogue: normalise; approx adds the old context and accumulates the cosine statistics of the token's row.
#pragma unroll
    for (int uu = 0; uu < kUnitsPerWarp; ++uu) {
        const int u = warp + kAttnWarps * uu;
        if (u >= units) continue;
        const int64_t row  = tile.row0 + u / nh;
        const int64_t col0 = int64_t(h0 + u % nh) * D;
        const float   inv  = l[uu] > 0.0f ? 1.0f / l[uu] : 0.0f;  // a sequence without keys contributes 0
        float         dot = 0.0f, nn = 0.0f, no = 0.0f;
#pragma unroll
        for (int c = 0; c < kMaxDimChunks; ++c) {
            const int d = lane + 32 * c;
            if (d >= D) continue;
            const float val = o[uu][c] * inv;
            if constexpr (!kApprox) {
                mat_store(a.out, row, col0 + d, val);
            } else {
                const float old = mat_load(a.c_old, row, col0 + d);
                const float nw  = old + val;
                mat_store(a.out, row, col0 + d, nw);
                dot += nw * old;
                nn += nw * nw;
                no += old * old;
            }
        }
        if constexpr (!kApprox) {
            // Scores were scaled through q, so m is in the softmax's units; -inf for a sequence without keys.
            if (a.lse.data && lane == 0)
                mat_store(a.lse, row, h0 + u % nh, l[uu] > 0.0f ? m[uu] + logf(l[uu]) : -INFINITY);
        }
        if constexpr (kApprox) {
            if (a.stats) {
                dot = warp_sum(dot);
                nn  = warp_sum(nn);
                no  = warp_sum(no);
                if (lane == 0) {
                    atomicAdd(a.stats + 3 * row + 0, dot);
                    atomicAdd(a.stats + 3 * row + 1, nn);
                    atomicAdd(a.stats + 3 * row + 2, no);
                }
            }
        }
    }
}

// Checks the dims and sizes the launch. Returns cudaErrorInvalidValue for dims the kernel does not support.
inline cudaError_t attention_launch_config(const AttnDims& d, int n_tiles, dim3& grid, size_t& smem, int& heads_per_cta,
                                           int& n_head_chunks) {
    if (d.head_dim < 1 || d.head_dim > kMaxHeadDim || d.n_kv_head < 1 || d.n_head < d.n_kv_head ||
        d.n_head % d.n_kv_head != 0)
        return cudaErrorInvalidValue;
    heads_per_cta = attention_heads_per_cta(d);
    n_head_chunks = attention_head_chunks(d.n_head, d.n_kv_head);
    grid          = dim3(unsigned(n_tiles), unsigned(d.n_kv_head * n_head_chunks));
    smem          = attention_smem_bytes(d.head_dim);
    return cudaSuccess;
}

}  // namespace dyllm::cuda
