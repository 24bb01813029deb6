// Reference exact varlen bidirectional attention with GQA.
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu::ref {

// out[i, h] = sum_j softmax_j(q[i, h] . k[j, g] / sqrt(D)) v[j, g] over keys j in [cu_k[b], cu_k[b+1]), b = q_seq[i],
// g = h / (n_head / n_kv_head). q, out: [nq, n_head * D]; k, v: [nk, n_kv_head * D]; cu_k: [n_seq + 1].
// A sequence without keys gives zero rows. fp64 scores, softmax and sums.
// lse (optional, [nq, n_head]): the log-sum-exp of each (row, head)'s scaled scores, the softmax statistics DyLLM's
// column-sparse update reuses (-inf for a sequence without keys).
void attention(CMatF q, const int32_t* q_seq, CMatF k, CMatF v, const int32_t* cu_k, AttnDims dims, MatF out,
               MatF lse = {});

}  // namespace dyllm::cpu::ref
