// Exact bidirectional varlen attention on CUDA (tiled, online softmax, GQA): every query row attends to all keys of
// its sequence. Used for FULL steps and, on a gathered subset of rows, for the exact rows of sparse steps.
#pragma once
#include <cuda_runtime_api.h>

#include "kernels/common/attention_approx_math.h"
#include "kernels/cuda/mat.cuh"

namespace dyllm::cuda {

// Rows per query tile the kernels expect for these dims (pass to plan_query_tiles).
int attention_tile_rows(const AttnDims& dims);

// q: [nq, H_q*D] (any type); k, v: [nk, H_kv*D] (any type); cu_k: [B + 1] device key offsets; tiles: n_tiles device
// QueryTile runs from plan_query_tiles(q_seq, ..., attention_tile_rows(dims)); out: [nq, H_q*D]. head_dim <= 256.
// lse: [nq, H_q] F32 (log-sum-exp of each (row, head)'s scaled scores), or a Mat with null data for none.
cudaError_t attention(const Mat& q, const Mat& k, const Mat& v, const int32_t* cu_k, const QueryTile* tiles,
                      int n_tiles, AttnDims dims, const Mat& out, const Mat& lse, cudaStream_t stream);

}  // namespace dyllm::cuda
