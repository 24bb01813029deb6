// Row gather/scatter on CUDA (with storage-type conversion): the cache reads and writes of the DyLLM forward pass.
#pragma once
#include <cuda_runtime_api.h>

#include "kernels/cuda/mat.cuh"

namespace dyllm::cuda {

// dst[i, :] = src[idx[i], :] for i < dst.rows. idx: dst.rows device int32 (in range, checked by the caller).
cudaError_t gather_rows(const Mat& src, const int32_t* idx, const Mat& dst, cudaStream_t stream);
// dst[idx[i], :] = src[i, :] for i < src.rows. Duplicate indices leave one of the rows (unspecified which).
cudaError_t scatter_rows(const Mat& src, const int32_t* idx, const Mat& dst, cudaStream_t stream);

}  // namespace dyllm::cuda
