// Optimised RoPE: inverse frequencies once per call, cos/sin once per row (shared by all heads), then a vectorisable
// rotation of each head's two halves. Bitwise equal to the reference (same fp32 formulas, same order).
#include "kernels/cpu/rope.h"

#include <cmath>
#include <vector>

#include "kernels/common/scalar_math.h"
#include "kernels/cpu/simd.h"

namespace dyllm::cpu {

namespace {
DYLLM_CPU_CLONES void rotate_heads(float* xr, int n_head, int head_dim, const float* cs, const float* sn) {
    const int half = head_dim / 2;
    for (int h = 0; h < n_head; ++h) {
        float* x1 = xr + int64_t(h) * head_dim;
        float* x2 = x1 + half;
        for (int c = 0; c < half; ++c) {
            const float a = x1[c] * cs[c] - x2[c] * sn[c];
            const float b = x2[c] * cs[c] + x1[c] * sn[c];
            x1[c]         = a;
            x2[c]         = b;
        }
    }
}
}  // namespace

void rope(MatF x, const int32_t* positions, int n_head, int head_dim, float theta) {
    if (x.rows == 0) return;
    const int          half = head_dim / 2;
    std::vector<float> inv(static_cast<size_t>(half)), cs(inv.size()), sn(inv.size());
    for (int c = 0; c < half; ++c) inv[size_t(c)] = rope_inv_freq(c, head_dim, theta);
    for (int64_t i = 0; i < x.rows; ++i) {
        for (int c = 0; c < half; ++c) {
            const float a = float(positions[i]) * inv[size_t(c)];
            cs[size_t(c)] = cosf(a);
            sn[size_t(c)] = sinf(a);
        }
        rotate_heads(x.row(i), n_head, head_dim, cs.data(), sn.data());
    }
}

}  // namespace dyllm::cpu
