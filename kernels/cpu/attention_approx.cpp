// Optimised approximate attention: the block softmax over every key (attention_tiles), then the weighted sum of dV
// over the sequence's salient keys only, divided by the full normaliser and added to the old context.
#include "kernels/cpu/attention_approx.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/attention_tiles.h"

namespace dyllm::cpu {

void attention_approx(CMatF q, const int32_t* q_seq, CMatF k, CMatF dv, const int32_t* sal_k, const int32_t* cu_sal,
                      const int32_t* cu_k, int n_seq, CMatF c_old, AttnDims dims, MatF c_new, ThreadPool& pool,
                      int row_block, CMatF v, const int32_t* exact, int64_t n_exact) {
    if (q.rows == 0) return;
    const int               R    = row_block > 0 ? row_block : detail::kAttnRowBlock;
    const detail::AttnCall  call = detail::prepare_attention(q_seq, q.rows, cu_k, n_seq, dims, pool.size(), R);
    const detail::AttnPlan& plan = *call.plan;
    const int               D    = dims.head_dim;
    // Which query rows are exact, and per sequence whether any is (a sequence without salient keys and without exact
    // rows keeps its contexts and skips the scores).
    thread_local std::vector<uint8_t> is_exact, seq_exact;  // kept between calls: no allocation per step
    is_exact.assign(n_exact > 0 ? size_t(q.rows) : 0, 0);
    seq_exact.assign(size_t(n_seq), 0);
    for (int64_t e = 0; e < n_exact; ++e) {
        is_exact[size_t(exact[e])]         = 1;
        seq_exact[size_t(q_seq[exact[e]])] = 1;
    }
    const uint8_t* ex_row = is_exact.data();  // the lambda runs on pool threads: never name a thread_local inside it
    const uint8_t* ex_seq = seq_exact.data();
    // Work: the scores of every row, P dV over the salient keys, and P V over every key for an exact row.
    int64_t work = detail::plan_work(plan, cu_k, D);
    for (int64_t e = 0; e < n_exact; ++e)
        work += 2 * int64_t(dims.n_head) * (cu_k[q_seq[exact[e]] + 1] - cu_k[q_seq[exact[e]]]) * D;
    pool.parallel_for(int64_t(plan.tasks.size()), work, [&, sp = call.scratch](int64_t ti, int thread) {
        detail::AttnScratch&    s    = sp[thread];
        const detail::AttnTask& t    = plan.tasks[size_t(ti)];
        const int32_t*          rows = plan.order.data() + t.first;
        const int64_t           s0 = cu_sal[t.seq], s1 = cu_sal[t.seq + 1];
        if (s0 == s1 && !ex_seq[t.seq]) {  // no salient key in this sequence: the context is unchanged
            for (int r = 0; r < t.n; ++r) {
                const float* co = c_old.row(rows[r]) + int64_t(t.head) * D;
                float*       cn = c_new.row(rows[r]) + int64_t(t.head) * D;
                if (co != cn) std::copy(co, co + D, cn);
            }
            return;
        }
        const int64_t k0 = cu_k[t.seq], k1 = cu_k[t.seq + 1], ld_p = detail::score_stride(t.n);
        detail::softmax_block(q, rows, t.n, t.head, k, k0, k1, dims, s.p.data(), ld_p, s.l.data(), s.qt.data(), nullptr,
                              detail::first_block(plan, t));
        const int64_t kv_off = int64_t(t.head / (dims.n_head / dims.n_kv_head)) * D;
        detail::pv_block(s.p.data(), ld_p, t.n, s1 - s0, sal_k + s0, k0, dv, s0, kv_off, D, s.acc.data(),
                         s.pack.data());
        // The block's exact rows: cpu::attention's rows, P V over every key, all of them in one pv_block call on their
        // scores gathered into a block of their own. pv_block sums each output over the keys in the same order
        // whatever rows share the call, so each is bit for bit the row cpu::attention gives. One call per row (as
        // before) left a head dim of 32 two accumulator chains, each waiting out the FMA latency at every key.
        int ne = 0;
        if (ex_seq[t.seq]) {
            for (int r = 0; r < t.n; ++r)
                if (ex_row[rows[r]]) s.exact_r[size_t(ne++)] = r;
            if (ne > 0) {
                const int64_t nk = k1 - k0;
                for (int64_t j = 0; j < nk; ++j)
                    for (int e = 0; e < ne; ++e)
                        s.p_e[size_t(j * ne + e)] = s.p[size_t(j * ld_p + s.exact_r[size_t(e)])];
                detail::pv_block(s.p_e.data(), ne, ne, nk, nullptr, 0, v, k0, kv_off, D, s.acc_e.data(), s.pack.data());
            }
        }
        for (int r = 0, e = 0; r < t.n; ++r) {
            float* cn = c_new.row(rows[r]) + int64_t(t.head) * D;
            if (e < ne && s.exact_r[size_t(e)] == r) {  // normalised as cpu::attention does
                const float* a   = s.acc_e.data() + int64_t(e++) * D;
                const float  inv = s.l[size_t(r)] > 0.0f ? 1.0f / s.l[size_t(r)] : 0.0f;
                for (int c = 0; c < D; ++c) cn[c] = a[c] * inv;
                continue;
            }
            const float* co = c_old.row(rows[r]) + int64_t(t.head) * D;
            if (s0 == s1) {  // scored only for this sequence's exact rows: this one keeps its context
                if (co != cn) std::copy(co, co + D, cn);
                continue;
            }
            const float* a   = s.acc.data() + int64_t(r) * D;
            const float  inv = 1.0f / s.l[size_t(r)];  // l >= 1: the max key contributes exp(0)
            for (int c = 0; c < D; ++c) cn[c] = co[c] + a[c] * inv;
        }
    });
}

}  // namespace dyllm::cpu
