// Optimised y = x W^T + b for block-quantized weights (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K), W kept in its stored blocks:
// fixed panels of W rows are decoded to fp32 in a per-thread buffer and multiplied with sgemm, whatever the row count
// of x (a decode-and-dot path for few rows measured slower at every row count, kernels/README.md "Quantized
// weights").
#pragma once
#include <cstdint>

#include "kernels/cpu/mat.h"
#include "kernels/cpu/quant_type.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm::cpu {

// Decoded W rows per sgemm panel: about this many fp32 elements (a panel then stays in a core's L2 while sgemm reads it
// for every row of x), in whole multiples of 16 rows, 16 to 256. A function of k alone, so a product's panels, and
// hence its bits, are the same at any thread count.
constexpr int64_t kQuantPanelElems = int64_t(1) << 17;
int64_t           quant_panel_rows(int64_t k);

// The instruction set the block decoders are compiled for, chosen once from the CPU (Auto) or forced (tests: the
// AVX2 and baseline versions run on an AVX-512 machine too). Forcing one the CPU lacks is the caller's error.
enum class QuantIsa : uint8_t { Auto, Avx512, Avx2, Baseline };
void        quant_force_isa(QuantIsa isa);
QuantIsa    quant_isa();  // the one in use (never Auto)
const char* quant_isa_name(QuantIsa isa);

// x: [n, k] fp32; w: [m, k] quantized; bias: [1, m] (any type) or bias.data == nullptr; y: [n, m] fp32, not aliasing
// x. The panels (quant_panel_rows) and their sgemm calls are the same at any thread count, so are the results.
void quant_matmul(CMatF x, QuantMat w, ConstMat bias, MatF y, ThreadPool& pool);

// Rows of a quantized table widened to fp32 (the embedding lookup): out[i, :] = table[ids[i], :].
void quant_gather_rows(QuantMat table, const int32_t* ids, MatF out);

}  // namespace dyllm::cpu
