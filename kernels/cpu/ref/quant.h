// ggml's quantized block layouts (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K: facts of the GGUF format), row quantization with
// the scale choices of ggml's reference quantizers, row dequantization, and the fp64 reference product on them.
#pragma once
#include <cstdint>

#include "kernels/cpu/mat.h"
#include "kernels/cpu/quant_type.h"

namespace dyllm::cpu {

constexpr int kQuantBlock32 = 32;   // elements per Q8_0 / Q4_0 block
constexpr int kQuantBlockK  = 256;  // elements per K-quant super-block
constexpr int kQuantKScales = 12;   // bytes of packed 6-bit sub-block scales and mins (Q4_K, Q5_K)

// Scales d / dmin are IEEE fp16 bit patterns. Every struct is byte-exact with the file (no padding; 2-byte aligned).
// x = d * q, q in [-128, 127].
struct BlockQ8_0 {
    uint16_t d;
    int8_t   qs[kQuantBlock32];
};
// x = d * (q - 8); qs[j] holds element j in its low nibble and element j + 16 in its high nibble.
struct BlockQ4_0 {
    uint16_t d;
    uint8_t  qs[kQuantBlock32 / 2];
};
// 8 sub-blocks of 32: x = d * sc[j] * q - dmin * m[j], q in [0, 15], sc/m 6-bit (quant_k_scale_min). Each 32-byte
// group g of qs holds sub-block 2g in its low nibbles and 2g + 1 in its high nibbles.
struct BlockQ4_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t  scales[kQuantKScales];
    uint8_t  qs[kQuantBlockK / 2];
};
// As Q4_K with a fifth bit: q in [0, 31]; bit 2g of qh[l] is element l of sub-block 2g's, bit 2g + 1 is sub-block
// 2g + 1's.
struct BlockQ5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t  scales[kQuantKScales];
    uint8_t  qh[kQuantBlockK / 8];
    uint8_t  qs[kQuantBlockK / 2];
};
// 16 sub-blocks of 16: x = d * scales[j] * (q - 32), q in [0, 63]. Per half of 128 elements (ql 64 bytes, qh 32):
// element l (l < 32) low 4 bits in ql[l] low nibble, l + 32 in ql[l + 32] low, l + 64 in ql[l] high, l + 96 in
// ql[l + 32] high; their 2 high bits in qh[l] at bit 0, 2, 4, 6.
struct BlockQ6_K {
    uint8_t  ql[kQuantBlockK / 2];
    uint8_t  qh[kQuantBlockK / 4];
    int8_t   scales[kQuantBlockK / 16];
    uint16_t d;
};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);

// Sub-block j's (j < 8) 6-bit scale and min of a Q4_K / Q5_K block: j < 4 in the low 6 bits of bytes j and j + 4;
// j >= 4 in the nibbles of byte j + 4, with their top 2 bits in the top bits of bytes j - 4 (scale) and j (min).
inline void quant_k_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m  = q[j + 4] & 63;
    } else {
        *sc = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m  = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// y <- x[0..n) quantized (n a multiple of quant_block_elems(t); y holds quant_row_bytes(t, n) bytes). Round to
// nearest with ggml's reference scale choice: Q8_0 amax / 127; Q4_0 the signed extreme / -8; Q4_K / Q5_K a weighted
// least-squares search of scale and min per sub-block, the scales and mins then quantized to 6 bits; Q6_K a scale
// search per 16-element sub-block, the scales quantized to int8. Deterministic (no threads, no SIMD).
void quantize_row(QuantType t, const float* x, void* y, int64_t n);
// y[0..n) <- the values of the blocks at x.
void dequantize_row(QuantType t, const void* x, float* y, int64_t n);

namespace ref {

// y = x W^T + b: each W row dequantized (dequantize_row), then summed in fp64. x: [n, k] fp32; w: [m, k] quantized;
// bias: [1, m] (any type) or bias.data == nullptr; y: [n, m] fp32.
void quant_matmul(CMatF x, QuantMat w, ConstMat bias, MatF y);

}  // namespace ref
}  // namespace dyllm::cpu
