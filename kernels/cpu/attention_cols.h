// Optimised DyLLM column-sparse approximate attention, plain and incremental (same contract as ref::attention_cols).
#pragma once
#include "kernels/cpu/mat.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm::cpu {

// See ref::attention_cols for the maths, the incremental form (k_old.data != nullptr) and its fallback. Only the
// salient keys' scores are computed: O(|S| D) per (row, head) instead of O(n_keys D). Indices in range (checked by the
// caller); c_new may alias c_old and lse_out may alias lse. Threaded over blocks of query rows.
void attention_cols(CMatF q, const int32_t* q_seq, CMatF k, CMatF dv, const int32_t* sal_k, const int32_t* cu_sal,
                    CMatF lse, CMatF c_old, AttnDims dims, MatF c_new, ThreadPool& pool, CMatF k_old = {},
                    CMatF v_old = {}, MatF lse_out = {});

}  // namespace dyllm::cpu
