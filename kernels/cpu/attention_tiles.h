// Pieces shared by the optimised exact and approximate attention: the task plan (query rows grouped by sequence, cut
// into blocks of rows per head), the block score/softmax routine and the P x V product.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/mat.h"

namespace dyllm::cpu::detail {

// Query rows per task: each K and V row is reused across this many query rows. Measured with
// tests/bench/bench_kernels_cpu.cpp (GFLOP/s per core by CPU time, kernels/README.md "Attention"); the score buffer
// is score_stride(64) = 80 x n_keys fp32.
constexpr int kAttnRowBlock = 64;

struct AttnTask {
    int32_t seq;    // sequence b
    int32_t head;   // query head h
    int64_t first;  // rows order[first .. first + n) of the plan
    int32_t n;
};

struct AttnPlan {
    std::vector<int32_t>  order;        // query row indices, grouped by sequence (stable)
    std::vector<AttnTask> tasks;        // ordered (seq, head, block) so neighbouring tasks share one head's K and V
    int64_t               max_keys;     // longest key range of a sequence that has queries
    std::vector<int64_t>  start, fill;  // planning scratch; start[b]: where sequence b's rows begin in order
};

// Fills `plan` (its vectors keep their capacity between calls, so a steady run allocates nothing).
void plan_attention(AttnPlan& plan, const int32_t* q_seq, int64_t nq, const int32_t* cu_k, int n_seq, int n_head,
                    int row_block = kAttnRowBlock);

// Work of the plan's tasks (kMinSplitWork's unit): scores and P x V, 2 n_rows n_keys head_dim per task.
int64_t plan_work(const AttnPlan& plan, const int32_t* cu_k, int head_dim);

// Score rows of a block of n query rows: p holds the block's scores keys x queries, p[j * ld + r], with ld = n
// rounded up to the vector width so every key's scores are whole vectors: 4 lanes up to 4 rows, 8 up to 8, else 16.
inline int64_t score_ld(int n) {
    return n <= 4 ? 4 : n <= 8 ? 8 : (int64_t(n) + 15) / 16 * 16;
}

// The row stride of a block's score buffer: score_ld(n), plus 16 floats when that is a multiple of 32. A stride of
// 128 or 256 bytes put a pass's consecutive keys in every second or fourth L1 set, so the score lines that the exp
// pass and P x V's later row tiles read again were evicted before they came back (tiny-llada's 64-row blocks: 336
// keys in 16 sets, 8 ways each).
inline int64_t score_stride(int n) {
    return score_ld(n) % 32 == 0 ? score_ld(n) + 16 : score_ld(n);
}

// Blocks of at most this many query rows score 16 keys per vector (K transposed per call) instead of a few query rows
// per vector: the kernel the sparse steps' 1-4 salient rows run.
constexpr int kAttnFewRows = 4;

// Floats softmax_block needs in its qt scratch: the transposed queries, or for a few-row block (head_dim a multiple
// of 16) the transposed keys and the row-major scores.
inline int64_t softmax_scratch_floats(int n, int64_t n_keys, int head_dim) {
    const int64_t nkp = (n_keys + 15) / 16 * 16;
    return n <= kAttnFewRows && head_dim % 16 == 0 ? (int64_t(head_dim) + kAttnFewRows) * nkp
                                                   : int64_t(head_dim) * score_ld(n);
}

// Terms per chunk of pv_block: about 16 KiB of src rows, at least 16.
inline int64_t pv_chunk_terms(int head_dim) {
    return std::max<int64_t>(16, 16384 / (int64_t(head_dim) * 4));
}

// Per-thread scratch of the attention kernels, kept between calls (thread_local in the kernels).
struct AttnScratch {
    std::vector<float>   p, acc, l, qt, m;  // m: the row maxima (exact attention's log-sum-exp)
    std::vector<float>   acc_e, p_e;        // approximate attention's exact rows: their P V, their scores gathered
    std::vector<int32_t> exact_r;           // and their places in the block
    std::vector<float>   pack;              // pv_block's chunk of V (or dV) rows
    void                 size_for(int row_block, int64_t max_keys, int head_dim);
};

// The plan and the per-pool-thread scratch of one attention call: both thread_local to the calling thread and kept
// between calls (the scratch sized here, on the calling thread, so a worker's first task never allocates): after the
// first call of the largest shape nothing is allocated. Valid until the calling thread's next call.
struct AttnCall {
    const AttnPlan* plan;
    AttnScratch*    scratch;  // [pool size]
};
AttnCall prepare_attention(const int32_t* q_seq, int64_t nq, const int32_t* cu_k, int n_seq, AttnDims dims,
                           int n_threads, int row_block);

// Unnormalised softmax of one block: for the n query rows rows[0..n) at head h and the keys [k0, k1) of their
// sequence, p[(j - k0) * ld_p + r] = exp(s_rj - m_r) with s_rj = q[rows[r], h] . k[j, g] / sqrt(D), and
// l[r] = sum_j p[j, r] (fp32). g = h / (n_head / n_kv_head). ld_p >= score_ld(n); l and m (optional, the row maxima
// m_r) hold score_ld(n) floats. qt: scratch of softmax_scratch_floats(n, k1 - k0, head_dim) floats.
// prefetch: the first block of a (sequence, head), whose K rows may be cold (a cached step's K and V were written a
// step ago and come from L3): K is prefetched ahead of the scoring, and so are the rows [k0, k1) of head h of v_next
// (optional), the V the caller reads next. Later blocks of the head find both in L2.
// The same dot and sum order per score as the former row-major kernel; every exp is simd::exp_nonpos (that kernel
// took libm's expf for the keys past the last whole group of 16).
void softmax_block(CMatF q, const int32_t* rows, int n, int h, CMatF k, int64_t k0, int64_t k1, AttnDims dims, float* p,
                   int64_t ld_p, float* l, float* qt, float* m = nullptr, bool prefetch = false, CMatF v_next = {});

// Whether task t is the first row block of its (sequence, head): the one that reads the head's K and V first.
inline bool first_block(const AttnPlan& plan, const AttnTask& t) {
    return t.first == plan.start[size_t(t.seq)];
}

// acc[r * D + c] = sum_{t < n_terms} p[col(t) * ld_p + r] * src.row(row0 + t)[kv_off + c] for r < n, c < D, where
// col(t) = cols ? cols[t] - col_base : t (p keys x queries, as softmax_block leaves it). Exact attention: src = V,
// all keys; approximate: src = dV, cols = sal_k.
// pack (optional): pv_chunk_terms(D) * D floats of scratch to copy each chunk of src rows into (when several row tiles
// read it); the sums are the same either way.
void pv_block(const float* p, int64_t ld_p, int n, int64_t n_terms, const int32_t* cols, int64_t col_base, CMatF src,
              int64_t row0, int64_t kv_off, int D, float* acc, float* pack = nullptr);

}  // namespace dyllm::cpu::detail
