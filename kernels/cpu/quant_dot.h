// The integer dot-product path of the quantized product: rows of x quantized per block to int8 (Q8 activation blocks),
// whole blocks of x and W multiplied in integers (AVX512-VNNI, AVX-VNNI or AVX2), each block's sum scaled once in fp32.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/mat.h"
#include "kernels/cpu/quant_type.h"

namespace dyllm::cpu {

// Activation block for Q8_0 / Q4_0 weights: x ~ d * qs, 32 elements.
struct ActBlock32 {
    float  d;
    int8_t qs[32];
};
// Activation super-block for K-quant weights: 256 elements, bsums[j] = sum of qs[16 j .. 16 j + 16) (the offsets and
// mins of the weights' levels are one multiply by these).
struct ActBlock256 {
    float   d;
    int16_t bsums[16];
    int8_t  qs[256];
};

// The weight types this path multiplies (the others keep decode + sgemm).
bool quant_dot_supported(QuantType t);

// Bytes of one row of k activations in the format quantization against weights of type t uses.
size_t quant_act_row_bytes(QuantType t, int64_t k);

// dst <- x[0..k) quantized per block (32 elements for Q8_0 / Q4_0 weights, 256 for the K-quants): d = max|x| / 127,
// q = x * (127 / max|x|) rounded to nearest (ties to even), so |x - d q| <= d / 2 (up to the fp32 rounding of the
// product); an all-zero block has d = 0, q = 0.
void quantize_act_row(QuantType t, const float* x, void* dst, int64_t k);

// CPU checks of the quantized kernels' instruction sets (x86-64-v3: AVX2, FMA, BMI2, F16C; v4: v3 and AVX-512
// F/BW/DQ/VL), spelled as features clang's __builtin_cpu_supports also knows (it lacks the level names and avxvnni).
bool cpu_has_x86_64_v3();
bool cpu_has_x86_64_v4();
// One CPUID bit the builtins do not name (F16C: leaf 1 ECX bit 29; AVX-VNNI: leaf 7 sub-leaf 1 EAX bit 4; AMX):
// register 0-3 = EAX, EBX, ECX, EDX of (leaf, sub-leaf); false for a leaf the CPU lacks or off x86.
bool cpuid_bit(unsigned leaf, unsigned sub, int reg, int bit);

// The instruction set of the integer dot products.
enum class DotIsa : uint8_t { Vnni512, AvxVnni, Avx2 };
bool        dot_isa_available(DotIsa isa);
const char* dot_isa_name(DotIsa isa);

// y[i, o - o0] for x rows i < n (quantized by quantize_act_row, row stride xq_stride bytes) and W rows o in [o0, o1):
// per block an integer sum, scaled by d_x * d_w (and the mins by d_x * dmin_w) into 8 fp32 lanes in block order, the
// lanes summed at the end in a fixed order. Each output depends only on its own x row and W row, never on n, the
// tiling or the thread that computes it. The 8-lane kernels (AVX2, AVX-VNNI, and AVX512-VNNI for Q8_0 / Q4_0) give
// the same bits (the integer lanes are exact); AVX512-VNNI's K-quant kernels sum 16 lanes, another fp32 order.
void quant_dot_rows(DotIsa isa, const void* xq, size_t xq_stride, int64_t n, QuantMat w, int64_t o0, int64_t o1,
                    MatF y);

}  // namespace dyllm::cpu
