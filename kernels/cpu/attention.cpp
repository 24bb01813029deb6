// Optimised exact attention: per task, the block softmax then the blocked P x V (attention_tiles) into a per-thread
// [rows, D] buffer, normalised on the way out.
#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/attention_tiles.h"

namespace dyllm::cpu {

void attention(CMatF q, const int32_t* q_seq, CMatF k, CMatF v, const int32_t* cu_k, int n_seq, AttnDims dims, MatF out,
               ThreadPool& pool, int row_block, MatF lse) {
    if (q.rows == 0) return;
    const int               R    = row_block > 0 ? row_block : detail::kAttnRowBlock;
    const detail::AttnCall  call = detail::prepare_attention(q_seq, q.rows, cu_k, n_seq, dims, pool.size(), R);
    const detail::AttnPlan& plan = *call.plan;
    const int               D    = dims.head_dim;
    pool.parallel_for(
        int64_t(plan.tasks.size()), detail::plan_work(plan, cu_k, D), [&, sp = call.scratch](int64_t ti, int thread) {
            detail::AttnScratch&    s = sp[thread];
            const detail::AttnTask& t = plan.tasks[size_t(ti)];
            const int64_t  k0 = cu_k[t.seq], k1 = cu_k[t.seq + 1], nk = k1 - k0, ld_p = detail::score_stride(t.n);
            const int32_t* rows = plan.order.data() + t.first;
            detail::softmax_block(q, rows, t.n, t.head, k, k0, k1, dims, s.p.data(), ld_p, s.l.data(), s.qt.data(),
                                  s.m.data(), detail::first_block(plan, t), v);
            if (lse.data)
                for (int r = 0; r < t.n; ++r)
                    lse.row(rows[r])[t.head] =
                        s.l[size_t(r)] > 0.0f ? s.m[size_t(r)] + std::log(s.l[size_t(r)]) : -INFINITY;
            const int64_t kv_off = int64_t(t.head / (dims.n_head / dims.n_kv_head)) * D;
            detail::pv_block(s.p.data(), ld_p, t.n, nk, nullptr, 0, v, k0, kv_off, D, s.acc.data(), s.pack.data());
            for (int r = 0; r < t.n; ++r) {
                float*       o   = out.row(rows[r]) + int64_t(t.head) * D;
                const float* a   = s.acc.data() + int64_t(r) * D;
                const float  inv = s.l[size_t(r)] > 0.0f ? 1.0f / s.l[size_t(r)] : 0.0f;
                for (int c = 0; c < D; ++c) o[c] = a[c] * inv;
            }
        });
}

}  // namespace dyllm::cpu
