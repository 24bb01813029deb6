// Device-only helpers of the CUDA kernels: element loads/stores of any storage type (through the shared conversion
// functions of kernels/common/dtype_convert.h, so rounding matches the CPU ops bit for bit), warp and block reductions.
// Include only from .cu files.
#pragma once
#include <cuda_runtime.h>

#include "kernels/common/dtype_convert.h"
#include "kernels/cuda/mat.cuh"

namespace dyllm::cuda {

__device__ __forceinline__ float load_elem(const void* base, ElemType t, int64_t i) {
    switch (t) {
        case ElemType::F32:
            return static_cast<const float*>(base)[i];
        case ElemType::BF16:
            return bf16_to_f32(static_cast<const uint16_t*>(base)[i]);
        case ElemType::F16:
            return f16_to_f32(static_cast<const uint16_t*>(base)[i]);
    }
    return 0.0f;
}

__device__ __forceinline__ void store_elem(void* base, ElemType t, int64_t i, float v) {
    switch (t) {
        case ElemType::F32:
            static_cast<float*>(base)[i] = v;
            break;
        case ElemType::BF16:
            static_cast<uint16_t*>(base)[i] = f32_to_bf16(v);
            break;
        case ElemType::F16:
            static_cast<uint16_t*>(base)[i] = f32_to_f16(v);
            break;
    }
}

// Element (r, c) of a matrix.
__device__ __forceinline__ float mat_load(const Mat& m, int64_t r, int64_t c) {
    return load_elem(m.data, m.type, r * m.ld + c);
}
__device__ __forceinline__ void mat_store(const Mat& m, int64_t r, int64_t c, float v) {
    store_elem(m.data, m.type, r * m.ld + c, v);
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum over the whole block (blockDim.x a multiple of 32, at most 1024). Every thread gets the total. `scratch` holds
// 32 floats of shared memory; the call begins with a barrier so the scratch can be reused by consecutive calls.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < n_warps ? scratch[lane] : 0.0f;
    return warp_sum(v);
}

// Maximum over the whole block (same contract as block_sum).
__device__ __forceinline__ float block_max(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < n_warps ? scratch[lane] : -INFINITY;
    return warp_max(v);
}

// Launch size for a 1-D grid-stride loop over n elements.
inline unsigned grid_for(int64_t n, int threads, int64_t max_blocks = 65535) {
    int64_t b = (n + threads - 1) / threads;
    if (b < 1) b = 1;
    return unsigned(b < max_blocks ? b : max_blocks);
}

}  // namespace dyllm::cuda
