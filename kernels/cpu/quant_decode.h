// Block decoders for the optimised quantized kernels: one ggml block (kernels/cpu/ref/quant.h) into fp32, written as
// fixed-length loops over bytes that the per-ISA callers vectorise; always inlined into those callers.
#pragma once
#include <cstdint>

#include "kernels/common/dtype_convert.h"
#include "kernels/cpu/ref/quant.h"
#include "kernels/cpu/simd.h"

namespace dyllm::cpu::qdec {

// Each decoder writes quant_block_elems(t) floats, the same values as dequantize_row: every output is one product
// (or product and difference) of the same fp32 factors, in the same order.

DYLLM_ALWAYS_INLINE void q8_0(const BlockQ8_0* b, float* y) {
    const float d = f16_to_f32(b->d);
    for (int j = 0; j < 32; ++j) y[j] = d * float(b->qs[j]);
}

DYLLM_ALWAYS_INLINE void q4_0(const BlockQ4_0* b, float* y) {
    const float d = f16_to_f32(b->d);
    for (int j = 0; j < 16; ++j) {
        y[j]      = d * float(int(b->qs[j] & 0xF) - 8);
        y[j + 16] = d * float(int(b->qs[j] >> 4) - 8);
    }
}

DYLLM_ALWAYS_INLINE void q4_k(const BlockQ4_K* b, float* y) {
    const float d = f16_to_f32(b->d), dmin = f16_to_f32(b->dmin);
    for (int g = 0; g < 4; ++g) {
        uint8_t s0, m0, s1, m1;
        quant_k_scale_min(2 * g, b->scales, &s0, &m0);
        quant_k_scale_min(2 * g + 1, b->scales, &s1, &m1);
        const float    d0 = d * float(s0), n0 = dmin * float(m0), d1 = d * float(s1), n1 = dmin * float(m1);
        const uint8_t* q  = b->qs + 32 * g;
        float*         yg = y + 64 * g;
        for (int l = 0; l < 32; ++l) yg[l] = d0 * float(q[l] & 0xF) - n0;
        for (int l = 0; l < 32; ++l) yg[32 + l] = d1 * float(q[l] >> 4) - n1;
    }
}

DYLLM_ALWAYS_INLINE void q5_k(const BlockQ5_K* b, float* y) {
    const float d = f16_to_f32(b->d), dmin = f16_to_f32(b->dmin);
    for (int g = 0; g < 4; ++g) {
        uint8_t s0, m0, s1, m1;
        quant_k_scale_min(2 * g, b->scales, &s0, &m0);
        quant_k_scale_min(2 * g + 1, b->scales, &s1, &m1);
        const float    d0 = d * float(s0), n0 = dmin * float(m0), d1 = d * float(s1), n1 = dmin * float(m1);
        const uint8_t* q  = b->qs + 32 * g;
        float*         yg = y + 64 * g;
        for (int l = 0; l < 32; ++l) yg[l] = d0 * float((q[l] & 0xF) | (((b->qh[l] >> (2 * g)) & 1) << 4)) - n0;
        for (int l = 0; l < 32; ++l) yg[32 + l] = d1 * float((q[l] >> 4) | (((b->qh[l] >> (2 * g + 1)) & 1) << 4)) - n1;
    }
}

DYLLM_ALWAYS_INLINE void q6_k(const BlockQ6_K* b, float* y) {
    const float d = f16_to_f32(b->d);
    for (int h = 0; h < 2; ++h) {
        const uint8_t* ql = b->ql + 64 * h;
        const uint8_t* qh = b->qh + 32 * h;
        const int8_t*  sc = b->scales + 8 * h;
        // Quarter p (32 elements) takes its low bits from ql[32 * (p & 1) + l] (nibble p >> 1) and its high bits from
        // qh[l] >> 2 p; its two 16-element sub-blocks have scales sc[2 p], sc[2 p + 1]. d * scale is one product, then
        // times the level, as dequantize_row does. Loops of 16 with one scale each, so they vectorise.
        for (int p = 0; p < 4; ++p) {
            const uint8_t* lo = ql + 32 * (p & 1);
            const int      sh = 4 * (p >> 1);
            for (int s = 0; s < 2; ++s) {
                const float ds = d * float(sc[2 * p + s]);
                float*      yo = y + 128 * h + 32 * p + 16 * s;
                for (int l = 0; l < 16; ++l) {
                    const int j = 16 * s + l;
                    yo[l]       = ds * float(int(((lo[j] >> sh) & 0xF) | (((qh[j] >> (2 * p)) & 3) << 4)) - 32);
                }
            }
        }
    }
}

// A row of n elements (whole blocks) into y.
DYLLM_ALWAYS_INLINE void row(QuantType t, const void* src, float* y, int64_t n) {
    const int64_t nb = n / quant_block_elems(t);
    switch (t) {
        case QuantType::Q8_0:
            for (int64_t i = 0; i < nb; ++i) q8_0(static_cast<const BlockQ8_0*>(src) + i, y + 32 * i);
            break;
        case QuantType::Q4_0:
            for (int64_t i = 0; i < nb; ++i) q4_0(static_cast<const BlockQ4_0*>(src) + i, y + 32 * i);
            break;
        case QuantType::Q4_K:
            for (int64_t i = 0; i < nb; ++i) q4_k(static_cast<const BlockQ4_K*>(src) + i, y + 256 * i);
            break;
        case QuantType::Q5_K:
            for (int64_t i = 0; i < nb; ++i) q5_k(static_cast<const BlockQ5_K*>(src) + i, y + 256 * i);
            break;
        case QuantType::Q6_K:
            for (int64_t i = 0; i < nb; ++i) q6_k(static_cast<const BlockQ6_K*>(src) + i, y + 256 * i);
            break;
    }
}

}  // namespace dyllm::cpu::qdec
