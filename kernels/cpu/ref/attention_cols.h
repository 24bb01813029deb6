// Reference column-sparse approximate attention (the paper's stable-token path): scores of the salient keys only,
// normalised by the log-sum-exp cached at each row's last exact attention.
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu::ref {

// c_new[i, h] = c_old[i, h] + sum_{s in S(b)} exp(q[i, h] . k[sal_k[s], g] / sqrt(D) - lse[i, h]) dv[s, g], b = q_seq[i],
// S(b) = [cu_sal[b], cu_sal[b+1]), g = h / (n_head / n_kv_head). q, c_old, c_new: [nq, n_head * D]; k: [nk,
// n_kv_head * D]; dv: [ns, n_kv_head * D]; lse: [nq, n_head]. A row whose lse is -inf (no keys) keeps c_old. fp64 sums.
void attention_cols(CMatF q, const int32_t* q_seq, CMatF k, CMatF dv, const int32_t* sal_k, const int32_t* cu_sal,
                    CMatF lse, CMatF c_old, AttnDims dims, MatF c_new);

}  // namespace dyllm::cpu::ref
