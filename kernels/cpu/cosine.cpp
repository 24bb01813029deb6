// Optimised cosine: three 16-lane fp32 reductions per row.
#include "kernels/cpu/cosine.h"

#include "kernels/common/scalar_math.h"
#include "kernels/cpu/simd.h"

namespace dyllm::cpu {

DYLLM_CPU_CLONES void cosine_rows(CMatF a, CMatF b, float* cos_out) {
    for (int64_t i = 0; i < a.rows; ++i) {
        const float *x = a.row(i), *y = b.row(i);
        cos_out[i] = cosine_from_stats(simd::dot(x, y, a.cols), simd::sum_sq(x, a.cols), simd::sum_sq(y, a.cols));
    }
}

}  // namespace dyllm::cpu
