// Reference DyLLM column-sparse approximate attention (kernels/README.md §b.1).
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu::ref {

// c_new[i, h] = c_old[i, h] + sum_{s in [cu_sal[b], cu_sal[b+1])} p_i(sal_k[s]) * dv[s, g], b = q_seq[i],
// where p_i is the softmax of q[i, h] . k[j, g] / sqrt(D) over ALL keys j in [cu_k[b], cu_k[b+1]).
// q, c_old, c_new: [nq, n_head * D] (c_new may alias c_old); k: [nk, n_kv_head * D]; dv: [ns, n_kv_head * D];
// sal_k: [ns] packed key rows of the salient keys (inside their sequence's key range); cu_sal, cu_k: [n_seq + 1].
void attention_approx(CMatF q, const int32_t* q_seq, CMatF k, CMatF dv, const int32_t* sal_k, const int32_t* cu_sal,
                      const int32_t* cu_k, CMatF c_old, AttnDims dims, MatF c_new);

}  // namespace dyllm::cpu::ref
