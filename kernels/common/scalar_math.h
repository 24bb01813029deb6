// Scalar math written once and called by the CPU reference, the optimised CPU ops and the CUDA kernels
// (kernels/README.md): SiLU, RoPE frequencies, the online-softmax update, sampler scores, cosine from statistics.
#pragma once
#include <cmath>

#include "kernels/common/hd.h"

namespace dyllm {

DYLLM_HD float silu(float x) {
    return x / (1.0f + expf(-x));
}

// RoPE inverse frequency of pair i (0 <= i < head_dim / 2): theta^(-2i / head_dim), computed in fp32 as HF does.
DYLLM_HD float rope_inv_freq(int i, int head_dim, float theta) {
    return 1.0f / powf(theta, float(2 * i) / float(head_dim));
}

// Rotate-half RoPE on one pair (x1 = x[i], x2 = x[i + D/2]) at angle a: [x1 cos - x2 sin, x2 cos + x1 sin].
DYLLM_HD void rope_rotate_pair(float& x1, float& x2, float cos_a, float sin_a) {
    const float a = x1 * cos_a - x2 * sin_a;
    const float b = x2 * cos_a + x1 * sin_a;
    x1            = a;
    x2            = b;
}

// Online softmax state of one row: running max m and running sum l of exp(s - m) (Milakov & Gimelshein 2018).
struct OnlineSoftmax {
    float m = -INFINITY;
    float l = 0.0f;
};

// Adds score s; returns the factor the accumulated numerator must be multiplied by (exp(m_old - m_new)) and sets
// p = exp(s - m_new), the weight of the new element.
DYLLM_HD float online_softmax_push(OnlineSoftmax& st, float s, float& p) {
    const float m_new = s > st.m ? s : st.m;
    const float scale = (st.m == -INFINITY) ? 0.0f : expf(st.m - m_new);
    p                 = expf(s - m_new);
    st.l              = st.l * scale + p;
    st.m              = m_new;
    return scale;
}

// Cosine from (dot, |a|^2, |b|^2) with both squared norms clamped at 1e-8 (kernels/README.md §f.7).
DYLLM_HD float cosine_from_stats(float dot, float na2, float nb2) {
    const float a = na2 > 1e-8f ? na2 : 1e-8f;
    const float b = nb2 > 1e-8f ? nb2 : 1e-8f;
    return dot / (sqrtf(a) * sqrtf(b));
}

// Dream's negative-entropy term for one probability: p log(p + 1e-10) (engine/README.md §a.9 step 4).
DYLLM_HD float neg_entropy_term(float p) {
    return p * logf(p + 1e-10f);
}

}  // namespace dyllm
