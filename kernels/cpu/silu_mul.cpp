// Optimised SwiGLU gate: rows over the thread pool, the shared fp32 silu per element.
#include "kernels/cpu/silu_mul.h"

#include "kernels/common/scalar_math.h"
#include "kernels/cpu/simd.h"

namespace dyllm::cpu {

namespace {
DYLLM_CPU_CLONES void silu_mul_row(const float* g, const float* u, float* y, int64_t n) {
    for (int64_t c = 0; c < n; ++c) y[c] = silu(g[c]) * u[c];
}
}  // namespace

void silu_mul(CMatF gate, CMatF up, MatF y, ThreadPool& pool) {
    pool.parallel_for(y.rows, [&](int64_t i, int) { silu_mul_row(gate.row(i), up.row(i), y.row(i), y.cols); });
}

}  // namespace dyllm::cpu
