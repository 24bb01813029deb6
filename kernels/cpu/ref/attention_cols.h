// Reference column-sparse approximate attention (the paper's stable-token path): scores of the salient keys only,
// against the softmax statistics (log-sum-exp) cached at each row's last exact attention; optionally the incremental
// form that also takes out the changed keys' old terms and renormalises (engine/README.md decision 12).
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu::ref {

// The incremental form falls back (lse_out NaN, context unchanged) when the keys that did not change held less than
// this share of the row's old softmax mass: the update would divide by a difference of nearly equal sums, amplifying
// fp32 rounding (~1e-7) by more than 1e3.
constexpr double kColsMinRestMass = 1e-3;

// Per row i and head h (b = q_seq[i], S(b) = [cu_sal[b], cu_sal[b+1]), g = h / (n_head / n_kv_head),
// s_j = q[i, h] . k[j, g] / sqrt(D), z = lse[i, h]):
// - plain (k_old.data == nullptr), the paper's text:  c_new = c_old + sum_{t in S(b)} exp(s_{sal_k[t]} - z) dv[t]
// - incremental (k_old, v_old: [ns, n_kv_head * D] the salient keys' rows before the update; v_new = v_old + dv):
//     rest = 1 - sum_t exp(s_old_t - z),  Z = rest + sum_t exp(s_t - z),   s_old_t = q . k_old[t] / sqrt(D)
//     c_new = (c_old + sum_t [exp(s_t - z) v_new[t] - exp(s_old_t - z) v_old[t]]) / Z,  lse_out = z + log Z
//   which is exact attention over the updated keys when q and c_old, z are exact for the old keys. rest <
//   kColsMinRestMass gives c_new = c_old and lse_out = NaN (the caller recomputes that row exactly).
// A row whose lse is -inf (no keys) keeps c_old (lse_out -inf). lse_out (optional) may alias lse. fp64 sums.
// q, c_old, c_new: [nq, n_head * D]; k: [nk, n_kv_head * D]; dv: [ns, n_kv_head * D]; lse, lse_out: [nq, n_head].
void attention_cols(CMatF q, const int32_t* q_seq, CMatF k, CMatF dv, const int32_t* sal_k, const int32_t* cu_sal,
                    CMatF lse, CMatF c_old, AttnDims dims, MatF c_new, CMatF k_old = {}, CMatF v_old = {},
                    MatF lse_out = {});

}  // namespace dyllm::cpu::ref
