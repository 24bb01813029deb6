// Per-row cosine similarity on CUDA: fp32 (dot, |a|^2, |b|^2) over all columns, then cosine_from_stats
// (kernels/README.md §f.7).
#pragma once
#include <cuda_runtime_api.h>

#include "kernels/cuda/mat.cuh"

namespace dyllm::cuda {

// a, b: [n, w] any storage types; cos_out: n device floats. stats_out (optional, may be null): [n, 3] device floats
// (dot, |a|^2, |b|^2) for checking the approximate attention's fused statistics.
cudaError_t cosine_rows(const Mat& a, const Mat& b, float* cos_out, float* stats_out, cudaStream_t stream);

}  // namespace dyllm::cuda
