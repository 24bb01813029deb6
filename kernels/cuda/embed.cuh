// Embedding gather on CUDA: out[i, :] = table[ids[i], :] widened to fp32.
#pragma once
#include <cuda_runtime_api.h>

#include "kernels/cuda/mat.cuh"

namespace dyllm::cuda {

// table: [n_vocab, n_embd] any storage type; ids: n device int32 (checked in range by the caller); out: [n, n_embd]
// F32.
cudaError_t embed(const Mat& table, const int32_t* ids, const Mat& out, cudaStream_t stream);

}  // namespace dyllm::cuda
