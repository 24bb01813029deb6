// Online-softmax pieces beyond the per-element push of scalar_math.h: the rescale factor between two running maxima
// and the merge of two partial states (used by tiled attention and by block reductions over a logits row).
#pragma once
#include <cmath>

#include "kernels/common/hd.h"
#include "kernels/common/scalar_math.h"

namespace dyllm {

// exp(m_old - m_new), the factor that rescales sums and numerators accumulated under the old running max. A state that
// has seen nothing yet (m_old = -inf) holds zeros, so its factor is 0 (avoids exp(-inf - -inf) = NaN).
DYLLM_HD float online_softmax_rescale(float m_old, float m_new) {
    return (m_old == -INFINITY) ? 0.0f : expf(m_old - m_new);
}

// Merges state b into a: the result is the state of the concatenated score sequence (Milakov & Gimelshein 2018).
DYLLM_HD void online_softmax_merge(OnlineSoftmax& a, const OnlineSoftmax& b) {
    const float m = a.m > b.m ? a.m : b.m;
    if (m == -INFINITY) return;  // both empty
    a.l = a.l * online_softmax_rescale(a.m, m) + b.l * online_softmax_rescale(b.m, m);
    a.m = m;
}

}  // namespace dyllm
