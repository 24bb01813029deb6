// DyLLM's column-sparse approximate attention on CUDA, plain and incremental (engine/README.md decision 12; the maths
// and the fallback in kernels/cpu/ref/attention_cols.h): only the salient keys' scores, against the log-sum-exp cached
// at each row's last exact attention.
#pragma once
#include <cuda_runtime_api.h>

#include "kernels/cuda/mat.cuh"

namespace dyllm::cuda {

// q, c_old, c_new: [nq, H_q*D]; k: [nk, H_kv*D]; dv: [ns, H_kv*D]; lse: [nq, H_q]; q_seq: [nq]; sal_k: [ns];
// cu_sal: [B + 1]. Incremental when k_old.data is set (k_old, v_old: [ns, H_kv*D]); lse_out: [nq, H_q] or a Mat with
// null data. All pointers are device pointers; lse_out may alias lse. head_dim <= 256. One warp per (row, head).
cudaError_t attention_cols(const Mat& q, const int32_t* q_seq, const Mat& k, const Mat& dv, const int32_t* sal_k,
                           const int32_t* cu_sal, const Mat& lse, const Mat& c_old, AttnDims dims, const Mat& c_new,
                           const Mat& k_old, const Mat& v_old, const Mat& lse_out, cudaStream_t stream);

}  // namespace dyllm::cuda
