// Optimised SwiGLU gate: rows over the thread pool, 16 lanes per step (the reference keeps the shared scalar silu).
#include "kernels/cpu/silu_mul.h"

#include <algorithm>

#include "kernels/cpu/simd.h"

// The 16-lane helper is always inlined into its per-ISA caller: no vector is ever passed by value (GCC warns about the
// ABI at the end of a target_clones function, outside any push/pop, so the whole file).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace dyllm::cpu {

namespace {
// silu(g) u, N lanes at a time: with t = e^-|g| (simd::exp_nonpos_n, within ~2 ulp of expf), sigmoid(g) = 1 / (1 + t)
// for g >= 0 and t / (1 + t) for g < 0, the same value as the shared scalar g / (1 + expf(-g)) but without an exp that
// can overflow. The scalar form called expf once per element (libm has no vector expf without -ffast-math): on
// tiny-llada this op took longer than either FFN GEMM. The tail runs through the same lanes (padded), so a value gives
// the same result at every column. N = 16 (one zmm) with AVX-512, else 8 (one ymm): GCC builds the 16-lane exp's clamp
// and selects through scalar code and the stack on AVX2 (an AVX2 EPYC: this op took 10% of a DyLLM decode).
// Lane-wise: the same bits at any N.
template <int N>
DYLLM_ALWAYS_INLINE typename simd::Lanes<N>::F silu_mul_n(typename simd::Lanes<N>::F g, typename simd::Lanes<N>::F u) {
    using F = typename simd::Lanes<N>::F;
    const F zero{}, one = zero + 1.0f;
    const F t = simd::exp_nonpos_n<N>(g < zero ? g : -g);
    return g * ((g < zero ? t : one) / (one + t)) * u;
}

template <int N>
DYLLM_ALWAYS_INLINE void silu_mul_lanes(const float* g, const float* u, float* y, int64_t n) {
    int64_t c = 0;
    for (; c + N <= n; c += N) simd::store<N>(y + c, silu_mul_n<N>(simd::load<N>(g + c), simd::load<N>(u + c)));
    if (c == n) return;
    float gt[N] = {}, ut[N] = {}, yt[N];
    std::copy(g + c, g + n, gt);
    std::copy(u + c, u + n, ut);
    simd::store<N>(yt, silu_mul_n<N>(simd::load<N>(gt), simd::load<N>(ut)));
    std::copy(yt, yt + (n - c), y + c);
}

DYLLM_CPU_CLONES void silu_mul_row(const float* g, const float* u, float* y, int64_t n) {
    if (simd::wide_registers())
        silu_mul_lanes<16>(g, u, y, n);
    else
        silu_mul_lanes<8>(g, u, y, n);
}
}  // namespace

// kMinSplitWork units per element: an exp, a division and ~25 other vector ops per 16 lanes cost about 8 streaming
// element-operations (1 thread, Emerald Rapids Xeon: 0.94 ns per element on tiny-llada's [336, 344] gate, 109 us per
// call, which ran inline at 2 threads when it was counted as 1 unit per element).
constexpr int64_t kSiluWorkPerElement = 8;

void silu_mul(CMatF gate, CMatF up, MatF y, ThreadPool& pool) {
    // Row chunks of at least kMinSplitWork units each (one task per row costs more hand-outs than it saves).
    const int64_t row_work      = std::max<int64_t>(1, y.cols * kSiluWorkPerElement);
    const int64_t rows_per_task = std::max<int64_t>(1, kMinSplitWork / row_work);
    const int64_t n_tasks       = (y.rows + rows_per_task - 1) / rows_per_task;
    pool.parallel_for(n_tasks, y.rows * row_work, [&](int64_t t, int) {
        const int64_t r1 = std::min(y.rows, (t + 1) * rows_per_task);
        for (int64_t i = t * rows_per_task; i < r1; ++i) silu_mul_row(gate.row(i), up.row(i), y.row(i), y.cols);
    });
}

}  // namespace dyllm::cpu
