// Attention task planning and the block softmax: scores by 16-lane dot products (K rows reused across the block's
// query rows), row max, then exp and sum in place.
#include "kernels/cpu/attention_tiles.h"

#include <cmath>

#include "kernels/cpu/simd.h"

namespace dyllm::cpu::detail {

AttnPlan plan_attention(const int32_t* q_seq, int64_t nq, const int32_t* cu_k, int n_seq, int n_head,
                        int row_block) {
    AttnPlan             plan;
    std::vector<int64_t> start(size_t(n_seq) + 1, 0);
    for (int64_t i = 0; i < nq; ++i) ++start[size_t(q_seq[i]) + 1];
    for (int b = 0; b < n_seq; ++b) start[size_t(b) + 1] += start[size_t(b)];
    plan.order.resize(size_t(nq));
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (int64_t i = 0; i < nq; ++i) plan.order[size_t(fill[size_t(q_seq[i])]++)] = int32_t(i);
    plan.max_keys = 0;
    for (int b = 0; b < n_seq; ++b) {
        const int64_t n_rows = start[size_t(b) + 1] - start[size_t(b)];
        if (n_rows == 0) continue;
        plan.max_keys = std::max<int64_t>(plan.max_keys, cu_k[b + 1] - cu_k[b]);
        for (int h = 0; h < n_head; ++h)
            for (int64_t r = 0; r < n_rows; r += row_block)
                plan.tasks.push_back({b, h, start[size_t(b)] + r, int32_t(std::min<int64_t>(row_block, n_rows - r))});
    }
    return plan;
}

DYLLM_CPU_CLONES void softmax_block(CMatF q, const int32_t* rows, int n, int h, CMatF k, int64_t k0, int64_t k1,
                                    AttnDims dims, float* p, int64_t ld_p, float* l) {
    const int     D      = dims.head_dim;
    const int64_t kv_off = int64_t(h / (dims.n_head / dims.n_kv_head)) * D;
    const float   scale  = 1.0f / std::sqrt(float(D));
    const int64_t nk     = k1 - k0;
    for (int64_t j = 0; j < nk; ++j) {
        const float* kj = k.row(k0 + j) + kv_off;
        for (int r = 0; r < n; ++r) p[r * ld_p + j] = simd::dot(q.row(rows[r]) + int64_t(h) * D, kj, D) * scale;
    }
    for (int r = 0; r < n; ++r) {
        float* pr = p + r * ld_p;
        float  m  = -INFINITY;
        for (int64_t j = 0; j < nk; ++j) m = pr[j] > m ? pr[j] : m;
        float sum = 0.0f;
        for (int64_t j = 0; j < nk; ++j) sum += (pr[j] = expf(pr[j] - m));
        l[r] = sum;
    }
}

}  // namespace dyllm::cpu::detail
