// The AMX path of the quantized product (kernels/cpu/quant_matmul.h) for many rows of x: panels of 16 W rows decoded
// to bf16 (dequantize_row's fp32 values, each rounded once to nearest even), x rounded to bf16 once per product, and
// 16 x 16 output tiles accumulated in fp32 by AMX-BF16 (TDPBF16PS) over the whole of k.
#pragma once

#include "kernels/cpu/mat.h"
#include "kernels/cpu/quant_type.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm::cpu {

// Whether this CPU and OS run the path: CPUID AMX-TILE, AMX-BF16 and AVX512-BF16 (with x86-64-v4), and Linux granting
// the process the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM, asked once). False elsewhere: the other paths run.
bool quant_amx_available();

// y = x W^T without bias (x: [n, k] fp32, w: [m, k] quantized, y: [n, m], not aliasing x); quant_amx_available() must
// hold. Each output is one W row's panel tile summed over k in a fixed order by one thread: the same bits at any thread
// count and any n.
void quant_amx_matmul(CMatF x, QuantMat w, MatF y, ThreadPool& pool);

}  // namespace dyllm::cpu
