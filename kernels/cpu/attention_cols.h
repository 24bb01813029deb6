// Optimised DyLLM column-sparse approximate attention (same contract as ref::attention_cols).
#pragma once
#include "kernels/cpu/mat.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm::cpu {

// c_new[i, h] = c_old[i, h] + sum_{s in S(b)} exp(q[i, h] . k[sal_k[s], g] / sqrt(D) - lse[i, h]) dv[s, g].
// Only the salient keys' scores are computed: O(|S| D) per (row, head) instead of O(n_keys D). Indices in range
// (checked by the caller); c_new may alias c_old. Threaded over blocks of query rows.
void attention_cols(CMatF q, const int32_t* q_seq, CMatF k, CMatF dv, const int32_t* sal_k, const int32_t* cu_sal,
                    CMatF lse, CMatF c_old, AttnDims dims, MatF c_new, ThreadPool& pool);

}  // namespace dyllm::cpu
