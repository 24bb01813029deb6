// Optimised elementwise add/sub: plain row loops the compiler vectorises (per-ISA clones).
#include "kernels/cpu/elementwise.h"

#include "kernels/cpu/simd.h"

namespace dyllm::cpu {

DYLLM_CPU_CLONES void add(CMatF a, CMatF b, MatF y) {
    for (int64_t i = 0; i < y.rows; ++i) {
        const float *ar = a.row(i), *br = b.row(i);
        float*       yr = y.row(i);
        for (int64_t c = 0; c < y.cols; ++c) yr[c] = ar[c] + br[c];
    }
}

DYLLM_CPU_CLONES void sub(CMatF a, CMatF b, MatF y) {
    for (int64_t i = 0; i < y.rows; ++i) {
        const float *ar = a.row(i), *br = b.row(i);
        float*       yr = y.row(i);
        for (int64_t c = 0; c < y.cols; ++c) yr[c] = ar[c] - br[c];
    }
}

}  // namespace dyllm::cpu
