// RMSNorm on CUDA (fp32 math): y = x * rsqrt(mean(x^2) + eps) * w.
#pragma once
#include <cuda_runtime_api.h>

#include "kernels/cuda/mat.cuh"

namespace dyllm::cuda {

// x, y: [n, d] F32 (may alias); w: [1, d] any storage type.
cudaError_t rms_norm(const Mat& x, const Mat& w, float eps, const Mat& y, cudaStream_t stream);

}  // namespace dyllm::cuda
