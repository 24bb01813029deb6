// bf16 / fp16 <-> fp32 conversion on raw 16-bit patterns, shared by the CPU ops and the CUDA kernels.
// Rounding is round-to-nearest-even, matching torch's .to(bfloat16) and __float2bfloat16_rn.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/common/hd.h"

namespace dyllm {

DYLLM_HD uint32_t f32_bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
#endif
}

DYLLM_HD float f32_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
#endif
}

// bf16 is the top 16 bits of an fp32.
DYLLM_HD float bf16_to_f32(uint16_t h) {
    return f32_from_bits(uint32_t(h) << 16);
}

DYLLM_HD uint16_t f32_to_bf16(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // NaN stays a (quiet) NaN
    u += 0x7fffu + ((u >> 16) & 1u);                                          // round to nearest even
    return uint16_t(u >> 16);
}

// Round an fp32 to the nearest bf16 value and widen it back (used to mimic bf16 storage points).
DYLLM_HD float round_to_bf16(float f) {
    return bf16_to_f32(f32_to_bf16(f));
}

// IEEE binary16.
DYLLM_HD float f16_to_f32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t       exp  = (h >> 10) & 0x1fu;
    uint32_t       man  = h & 0x3ffu;
    if (exp == 0) {
        if (man == 0) return f32_from_bits(sign);
        // subnormal: normalise
        int e = -1;
        do {
            ++e;
            man <<= 1;
        } while ((man & 0x400u) == 0);
        man &= 0x3ffu;
        return f32_from_bits(sign | uint32_t(127 - 15 - e) << 23 | man << 13);
    }
    if (exp == 31) return f32_from_bits(sign | 0x7f800000u | man << 13);
    return f32_from_bits(sign | (exp + 127 - 15) << 23 | man << 13);
}

DYLLM_HD uint16_t f32_to_f16(float f) {
    const uint32_t u    = f32_bits(f);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t absu = u & 0x7fffffffu;
    if (absu > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
    if (absu >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflow to inf (>= 65520 rounds up)
    if (absu < 0x38800000u) {                                  // subnormal or zero in f16
        if (absu < 0x33000000u) return uint16_t(sign);         // below half the smallest subnormal
        const uint32_t exp   = absu >> 23;
        const uint32_t man   = (absu & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126 - exp;  // 113 - exp + 13
        uint32_t       r     = man >> shift;
        const uint32_t rem   = man & ((1u << shift) - 1u);
        const uint32_t half  = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1u))) ++r;
        return uint16_t(sign | r);
    }
    uint32_t r = absu - 0x38000000u;  // rebias exponent 127 -> 15
    r += 0xfffu + ((r >> 13) & 1u);   // round to nearest even on the 13 dropped bits
    return uint16_t(sign | (r >> 13));
}

}  // namespace dyllm
