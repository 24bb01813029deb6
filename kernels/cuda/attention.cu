// Exact attention: the shared tiled body (attention_tiled.cuh) without the salient-key masks.
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/attention_tiled.cuh"

namespace dyllm::cuda {

static __global__ void __launch_bounds__(kAttnWarps * 32) attention_kernel(AttnArgs a) {
    attention_tiled_body<false>(a);
}

static cudaError_t launch_attention(const AttnArgs& a, dim3 grid, size_t smem, cudaStream_t stream) {
    if (smem > 48 * 1024) {  // above the default dynamic shared memory limit: opt in (sm_80: 163 KB, sm_90: 227 KB)
        const cudaError_t e =
            cudaFuncSetAttribute(attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
        if (e != cudaSuccess) return e;
    }
    attention_kernel<<<grid, kAttnWarps * 32, smem, stream>>>(a);
    return cudaGetLastError();
}

int attention_tile_rows(const AttnDims& dims) {
    return attention_rows_per_tile(dims);
}

cudaError_t attention(const Mat& q, const Mat& k, const Mat& v, const int32_t* cu_k, const QueryTile* tiles,
                      int n_tiles, AttnDims dims, const Mat& out, const Mat& lse, cudaStream_t stream) {
    AttnArgs a;
    dim3     grid;
    size_t   smem = 0;
    if (const cudaError_t e = attention_launch_config(dims, n_tiles, grid, smem, a.heads_per_cta, a.n_head_chunks);
        e != cudaSuccess)
        return e;
    if (n_tiles == 0) return cudaSuccess;
    a.q     = q;
    a.k     = k;
    a.v     = v;
    a.out   = out;
    a.dims  = dims;
    a.tiles = tiles;
    a.cu_k  = cu_k;
    a.scale = 1.0f / sqrtf(float(dims.head_dim));
    a.lse   = lse;
    return launch_attention(a, grid, smem, stream);
}

}  // namespace dyllm::cuda
