// Optimised y = x W^T + b: OpenBLAS sgemm; F16/BF16 weights are widened to fp32 one panel of rows at a time (never
// the whole matrix: a bf16 LLaDA-8B is 16 GB and must run in 24 GiB), each panel reused across all rows of x.
#pragma once
#include "kernels/cpu/mat.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm::cpu {

// Rows of W widened per panel, by measurement (tests/bench/bench_kernels_cpu.cpp, 2 threads, GFLOP/s per core by CPU
// time on a shared 2-core AMD EPYC, bf16 weights, k = 4096 unless noted):
//   n = 768,  m = 4096:           panel 128: 87, 256: 103, 512: 107, 1024: 110, 2048: 111 (raw f32 sgemm: 106)
//   n = 768,  k = 12288, m = 4096: 128: 96, 256: 102, 512: 104, 1024: 109, 2048: 115 (raw: 104)
//   n = 3072, m = 4096:           128: 65, 256: 82, 512: 101, 1024: 110, 2048: 115 (raw: 116)
//   n = 32,   m = 4096:           256: 72, 512: 70, 1024: 67, 2048: 62 (raw: 76)
// Small panels make sgemm re-pack x once per panel (costly for many rows); few rows favour a panel that stays in
// cache. 1024 rows (16 MB of fp32 at k = 4096, 48 MB at k = 12288) for n >= 256, else 256.
constexpr int64_t kMatmulPanelRows      = 1024;
constexpr int64_t kMatmulPanelRowsSmall = 256;
constexpr int64_t kMatmulSmallN         = 256;

// x: [n, k] fp32; w: [m, k] F32/F16/BF16; bias: [1, m] (any type) or bias.data == nullptr; y: [n, m] fp32, not
// aliasing x. The pool widens panels; OpenBLAS threads the products. panel_rows 0 = the measured rule above.
void matmul(CMatF x, ConstMat w, ConstMat bias, MatF y, ThreadPool& pool, int64_t panel_rows = 0);

}  // namespace dyllm::cpu
