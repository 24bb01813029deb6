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

namespace {
template <class Op>
void split_rows(CMatF a, CMatF b, MatF y, ThreadPool& pool, Op op) {
    pool.parallel_rows_warm(y.rows, y.rows * y.cols, [&](int64_t r0, int64_t r1) {
        const int64_t n = r1 - r0;
        op(CMatF{a.row(r0), n, a.cols, a.ld}, CMatF{b.row(r0), n, b.cols, b.ld}, MatF{y.row(r0), n, y.cols, y.ld});
    });
}
}  // namespace

void add(CMatF a, CMatF b, MatF y, ThreadPool& pool) {
    split_rows(a, b, y, pool, [](CMatF a2, CMatF b2, MatF y2) { add(a2, b2, y2); });
}

void sub(CMatF a, CMatF b, MatF y, ThreadPool& pool) {
    split_rows(a, b, y, pool, [](CMatF a2, CMatF b2, MatF y2) { sub(a2, b2, y2); });
}

}  // namespace dyllm::cpu
