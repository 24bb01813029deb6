// DyLLM's column-sparse approximate attention on CUDA (the paper's stable-token path, engine/README.md decision 12):
// only the salient keys' scores, normalised by the log-sum-exp cached at each row's last exact attention.
#pragma once
#include <cuda_runtime_api.h>

#include "kernels/cuda/mat.cuh"

namespace dyllm::cuda {

// c_new[i, h] = c_old[i, h] + sum_{s in S(b)} exp(q[i, h] . k[sal_k[s], g] / sqrt(D) - lse[i, h]) dv[s, g], b = q_seq[i].
// q, c_old, c_new: [nq, H_q*D]; k: [nk, H_kv*D]; dv: [ns, H_kv*D]; lse: [nq, H_q]; q_seq: [nq]; sal_k: [ns];
// cu_sal: [B + 1]. All pointers are device pointers. head_dim <= 256. One warp per (row, head).
cudaError_t attention_cols(const Mat& q, const int32_t* q_seq, const Mat& k, const Mat& dv, const int32_t* sal_k,
                           const int32_t* cu_sal, const Mat& lse, const Mat& c_old, AttnDims dims, const Mat& c_new,
                           cudaStream_t stream);

}  // namespace dyllm::cuda
