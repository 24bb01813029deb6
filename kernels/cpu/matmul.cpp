// Optimised matmul: one sgemm for fp32 weights; for 16-bit weights a loop over panels of W rows, each widened by the
// thread pool into a reusable fp32 buffer and multiplied by all rows of x with one sgemm into y's matching columns.
#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/blas.h"
#include "kernels/cpu/convert.h"

namespace dyllm::cpu {

namespace {

// Adds the bias row to every row of y.
void add_bias(ConstMat bias, MatF y) {
    std::vector<float> b(size_t(y.cols));
    widen_row(bias.data, bias.type, b.data(), y.cols);
    for (int64_t i = 0; i < y.rows; ++i) {
        float* r = y.row(i);
        for (int64_t o = 0; o < y.cols; ++o) r[o] += b[size_t(o)];
    }
}

}  // namespace

void matmul(CMatF x, ConstMat w, ConstMat bias, MatF y, ThreadPool& pool, int64_t panel_rows) {
    if (y.rows == 0 || y.cols == 0) return;
    const int64_t k = x.cols;
    if (k == 0) {  // an empty sum (BLAS rejects leading dimensions of 0)
        for (int64_t i = 0; i < y.rows; ++i) std::fill(y.row(i), y.row(i) + y.cols, 0.0f);
    } else if (w.type == ElemType::F32) {
        sgemm_nt(x, CMatF{static_cast<const float*>(w.data), w.rows, w.cols, w.ld}, y);
    } else {
        if (panel_rows <= 0) panel_rows = y.rows >= kMatmulSmallN ? kMatmulPanelRows : kMatmulPanelRowsSmall;
        panel_rows = std::max<int64_t>(1, std::min(panel_rows, y.cols));
        // One panel buffer per thread that calls matmul, kept between calls (no page faults per call).
        thread_local std::vector<float> panel;
        panel.resize(size_t(panel_rows * k));
        float* const      buf = panel.data();  // the lambda runs on pool threads: never name the thread_local inside it
        constexpr int64_t kWidenChunk = 8;     // W rows per widening task: enough work to amortise the hand-out
        for (int64_t m0 = 0; m0 < y.cols; m0 += panel_rows) {
            const int64_t mb = std::min(panel_rows, y.cols - m0);
            pool.parallel_for((mb + kWidenChunk - 1) / kWidenChunk, [&](int64_t t, int) {
                const int64_t r1 = std::min(mb, (t + 1) * kWidenChunk);
                for (int64_t r = t * kWidenChunk; r < r1; ++r) widen_row(w.row_ptr(m0 + r), w.type, buf + r * k, k);
            });
            sgemm_nt(x, CMatF{buf, mb, k, k}, MatF{y.data + m0, y.rows, mb, y.ld});
        }
    }
    if (bias.data) add_bias(bias, y);
}

}  // namespace dyllm::cpu
