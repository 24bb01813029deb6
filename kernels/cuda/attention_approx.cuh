// DyLLM's column-sparse approximate attention on CUDA (kernels/README.md §b.1 steps 1-3): the softmax normaliser over
// every key of the query's sequence, the P x dV product only over the salient keys (64-key tiles with a bitmask),
// c_new = c_old + that product, with optional fused per-token cosine statistics (dot, |new|^2, |old|^2).
#pragma once
#include <cuda_runtime_api.h>

#include "kernels/common/attention_approx_math.h"
#include "kernels/cuda/mat.cuh"

namespace dyllm::cuda {

// q: [nq, H_q*D]; k: [nk, H_kv*D]; dv: [ns, H_kv*D], row s = dV of salient key sal_k[s]; cu_k: [B + 1];
// tiles: query runs planned with attention_tile_rows(dims); key_mask, key_base: [n_key_tiles] and tile_off: [B + 1]
// from build_key_tile_masks; c_old, c_new: [nq, H_q*D]; stats: [nq, 3] zeroed device floats, or null.
// All pointers are device pointers.
cudaError_t attention_approx(const Mat& q, const Mat& k, const Mat& dv, const int32_t* cu_k, const QueryTile* tiles,
                             int n_tiles, const uint64_t* key_mask, const int32_t* key_base, const int32_t* tile_off,
                             const Mat& c_old, AttnDims dims, const Mat& c_new, float* stats, cudaStream_t stream);

}  // namespace dyllm::cuda
