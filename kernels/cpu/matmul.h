// Optimised y = x W^T + b: OpenBLAS sgemm; F16/BF16 weights are widened to fp32 one panel of rows at a time (never
// the whole matrix: a bf16 LLaDA-8B is 16 GB and must run in 24 GiB), each panel reused across all rows of x.
#pragma once
#include "kernels/cpu/mat.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm::cpu {

// Rows of W widened per panel by default. Chosen by measurement (tests/bench/bench_kernels_cpu.cpp, see its header).
constexpr int64_t kMatmulPanelRows = 256;

// x: [n, k] fp32; w: [m, k] F32/F16/BF16; bias: [1, m] (any type) or bias.data == nullptr; y: [n, m] fp32, not
// aliasing x. The pool widens panels; OpenBLAS threads the products.
void matmul(CMatF x, ConstMat w, ConstMat bias, MatF y, ThreadPool& pool, int64_t panel_rows = kMatmulPanelRows);

}  // namespace dyllm::cpu
