// Reference rotate-half RoPE, one head and one pair at a time.
#include "kernels/cpu/ref/rope.h"

#include <cmath>

#include "kernels/common/scalar_math.h"

namespace dyllm::cpu::ref {

void rope(MatF x, const int32_t* positions, int n_head, int head_dim, float theta) {
    const int half = head_dim / 2;
    for (int64_t i = 0; i < x.rows; ++i) {
        for (int h = 0; h < n_head; ++h) {
            float* xh = x.row(i) + int64_t(h) * head_dim;
            for (int c = 0; c < half; ++c) {
                const float a = float(positions[i]) * rope_inv_freq(c, head_dim, theta);
                rope_rotate_pair(xh[c], xh[c + half], cosf(a), sinf(a));
            }
        }
    }
}

}  // namespace dyllm::cpu::ref
