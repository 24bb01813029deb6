// The AMX-INT8 path of the quantized product (kernels/cpu/quant_matmul.h) for few rows of x, DyLLM's sparse steps:
// x quantized per block to int8 as for the integer path (kernels/cpu/quant_dot.h), W's levels multiplied with it by
// TDPBSUD (Q4_K, Q6_K) or TDPBSSD (Q8_0) one sub-block or block at a time (exact int32 sums), each sum scaled by
// its factors in fp32. It does the
// work of the AVX512-VNNI kernels' 8-16 dot instructions per W block and x row in tile instructions, leaving the vector
// units the unpacking of the levels and the scaling.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/mat.h"
#include "kernels/cpu/quant_type.h"

namespace dyllm::cpu {

// The most rows of x one call takes (one tile of x rows).
constexpr int64_t kQuantAmxInt8MaxRows = 16;

// Whether this CPU and OS run the path: quant_amx_available() and CPUID AMX-INT8.
bool quant_amx_int8_available();
// The weight types it has kernels for.
bool quant_amx_int8_supported(QuantType t);

// y[:, o - o0] = x W[o]^T for W rows o0 .. o1, without bias. xq: n <= kQuantAmxInt8MaxRows rows of
// quantize_act_row(w.type, ...) blocks, row i at xq + i * xs; y: [n, o1 - o0]. Each output is summed in a fixed order
// by one call whatever o0, o1 and n: the same bits at any thread count.
void quant_amx_int8_rows(const void* xq, size_t xs, int64_t n, QuantMat w, int64_t o0, int64_t o1, MatF y);

}  // namespace dyllm::cpu
