// Approximate attention: the shared tiled body (attention_tiled.cuh) with the salient-key masks and the c_old epilogue.
#include "kernels/cuda/attention_approx.cuh"
#include "kernels/cuda/attention_tiled.cuh"

namespace dyllm::cuda {

static __global__ void __launch_bounds__(kAttnWarps * 32) attention_approx_kernel(AttnArgs a) {
    attention_tiled_body<true>(a);
}

static cudaError_t launch_attention_approx(const AttnArgs& a, dim3 grid, size_t smem, cudaStream_t stream) {
    if (smem > 48 * 1024) {  // above the default dynamic shared memory limit: opt in (sm_80: 163 KB, sm_90: 227 KB)
        const cudaError_t e =
            cudaFuncSetAttribute(attention_approx_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
        if (e != cudaSuccess) return e;
    }
    attention_approx_kernel<<<grid, kAttnWarps * 32, smem, stream>>>(a);
    return cudaGetLastError();
}

cudaError_t attention_approx(const Mat& q, const Mat& k, const Mat& dv, const int32_t* cu_k, const QueryTile* tiles,
                             int n_tiles, const uint64_t* key_mask, const int32_t* key_base, const int32_t* tile_off,
                             const Mat& c_old, AttnDims dims, const Mat& c_new, float* stats, cudaStream_t stream) {
    AttnArgs a;
    dim3     grid;
    size_t   smem = 0;
    if (const cudaError_t e = attention_launch_config(dims, n_tiles, grid, smem, a.heads_per_cta, a.n_head_chunks);
        e != cudaSuccess)
        return e;
    if (n_tiles == 0) return cudaSuccess;
    a.q        = q;
    a.k        = k;
    a.v        = dv;
    a.c_old    = c_old;
    a.out      = c_new;
    a.dims     = dims;
    a.tiles    = tiles;
    a.cu_k     = cu_k;
    a.scale    = 1.0f / sqrtf(float(dims.head_dim));
    a.key_mask = key_mask;
    a.key_base = key_base;
    a.tile_off = tile_off;
    a.stats    = stats;
    return launch_attention_approx(a, grid, smem, stream);
}

}  // namespace dyllm::cuda
