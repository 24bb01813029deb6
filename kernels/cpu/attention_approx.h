// Optimised DyLLM column-sparse approximate attention (same contract as ref::attention_approx).
#pragma once
#include "kernels/cpu/mat.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm::cpu {

// c_new[i, h] = c_old[i, h] + sum_{s in S(b)} p_i(sal_k[s]) dv[s, g], softmax over ALL keys of sequence b = q_seq[i].
// q, c_old, c_new: [nq, n_head * D] (c_new may alias c_old); k: [nk, n_kv_head * D]; dv: [ns, n_kv_head * D];
// sal_k: [ns]; cu_sal, cu_k: [n_seq + 1]; indices in range (checked by the caller). Scores are computed for all keys
// (the normaliser needs them), P dV only for the salient columns. row_block as in cpu::attention.
// Exact rows (optional): the query rows exact[0 .. n_exact) (ascending) get cpu::attention's output against v (the
// full V cache, [nk, n_kv_head * D]) instead, bit for bit: their scores, exps and sums are the ones the block
// computed for the approximation anyway (softmax_block's result does not depend on the block), and their P V runs
// over every key in order as cpu::attention's does. DyLLM's salient query rows so skip a second pass over the keys.
void attention_approx(CMatF q, const int32_t* q_seq, CMatF k, CMatF dv, const int32_t* sal_k, const int32_t* cu_sal,
                      const int32_t* cu_k, int n_seq, CMatF c_old, AttnDims dims, MatF c_new, ThreadPool& pool,
                      int row_block = 0, CMatF v = {}, const int32_t* exact = nullptr, int64_t n_exact = 0);

}  // namespace dyllm::cpu
