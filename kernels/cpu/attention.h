// Optimised exact varlen bidirectional attention with GQA (same contract as ref::attention).
#pragma once
#include "kernels/cpu/mat.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm::cpu {

// q, out: [nq, n_head * D]; k, v: [nk, n_kv_head * D]; q_seq: [nq]; cu_k: [n_seq + 1]; indices in range (checked by
// the caller). Threaded over (sequence, head, block of query rows); two-pass softmax with scores in per-thread
// buffers. A sequence without keys gives zero rows. out must not alias q, k or v. row_block: query rows per task
// (0 = detail::kAttnRowBlock; other values exist for the benchmark and the tests). lse (optional, [nq, n_head]): the
// log-sum-exp of each (row, head)'s scaled scores, as ref::attention.
void attention(CMatF q, const int32_t* q_seq, CMatF k, CMatF v, const int32_t* cu_k, int n_seq, AttnDims dims, MatF out,
               ThreadPool& pool, int row_block = 0, MatF lse = {});

}  // namespace dyllm::cpu
