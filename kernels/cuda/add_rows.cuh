// Add of gathered rows on CUDA: y[i, :] += src[idx[i], :], DyLLM's residual add of the cached FFN rows without a
// gathered copy.
#pragma once
#include <cuda_runtime_api.h>

#include "kernels/cuda/mat.cuh"

namespace dyllm::cuda {

// y[i, c] += src[idx[i], c] for i < y.rows (y F32; src any storage type, widened to fp32). idx: y.rows device int32
// (in range, checked by the caller).
cudaError_t add_rows(const Mat& src, const int32_t* idx, const Mat& y, cudaStream_t stream);

}  // namespace dyllm::cuda
