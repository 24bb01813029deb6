// Optimised SwiGLU gate: rows over the thread pool, the shared fp32 silu per element.
#include "kernels/cpu/silu_mul.h"

#include <algorithm>

#include "kernels/common/scalar_math.h"
#include "kernels/cpu/simd.h"

namespace dyllm::cpu {

namespace {
DYLLM_CPU_CLONES void silu_mul_row(const float* g, const float* u, float* y, int64_t n) {
    for (int64_t c = 0; c < n; ++c) y[c] = silu(g[c]) * u[c];
}
}  // namespace

void silu_mul(CMatF gate, CMatF up, MatF y, ThreadPool& pool) {
    // Row chunks of at least kMinSplitWork elements each (one task per row costs more hand-outs than it saves).
    const int64_t rows_per_task = std::max<int64_t>(1, kMinSplitWork / std::max<int64_t>(1, y.cols));
    const int64_t n_tasks       = (y.rows + rows_per_task - 1) / rows_per_task;
    pool.parallel_for(n_tasks, y.rows * y.cols, [&](int64_t t, int) {
        const int64_t r1 = std::min(y.rows, (t + 1) * rows_per_task);
        for (int64_t i = t * rows_per_task; i < r1; ++i) silu_mul_row(gate.row(i), up.row(i), y.row(i), y.cols);
    });
}

}  // namespace dyllm::cpu
