// Rotate-half RoPE on CUDA, in place, fp32 angles from a host-computed inverse-frequency table.
#pragma once
#include <cuda_runtime_api.h>

#include "kernels/cuda/mat.cuh"

namespace dyllm::cuda {

// x: [n, n_head * head_dim] F32, rotated in place; positions: n device int32; inv_freq: head_dim / 2 device floats
// (rope_inv_freq(i, head_dim, theta), computed on the host so angles match the CPU backend bit for bit).
cudaError_t rope(const Mat& x, const int32_t* positions, int n_head, int head_dim, const float* inv_freq,
                 cudaStream_t stream);

}  // namespace dyllm::cuda
