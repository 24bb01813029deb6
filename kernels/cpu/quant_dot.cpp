// The integer dot-product path (kernels/cpu/quant_dot.h): activation quantization, and the block kernels of
// quant_dot_kernels.inc compiled for AVX512-VNNI, AVX-VNNI and AVX2.
#include "kernels/cpu/quant_dot.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/ref/quant.h"
#include "kernels/cpu/simd.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define DYLLM_QUANT_DOT_X86 1
#endif

namespace dyllm::cpu {

namespace {

// Round to nearest, ties to even, for |v| < 2^22 (as the reference quantizers do): 1.5 * 2^23 added puts the integer
// in the low mantissa bits.
int nearest_even(float v) {
    float t = v + 12582912.0f;
    int   i;
    std::memcpy(&i, &t, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

// n values into q with d = max|x| / 127; returns d.
float quantize_block(const float* x, int8_t* q, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < n; ++j) q[j] = int8_t(std::clamp(nearest_even(x[j] * id), -127, 127));
    return amax / 127.0f;
}

}  // namespace

bool quant_dot_supported(QuantType t) {
#ifdef DYLLM_QUANT_DOT_X86
    return t == QuantType::Q8_0 || t == QuantType::Q4_0 || t == QuantType::Q4_K || t == QuantType::Q6_K;
#else
    (void)t;
    return false;
#endif
}

size_t quant_act_row_bytes(QuantType t, int64_t k) {
    return quant_block_elems(t) == 32 ? size_t(k / 32) * sizeof(ActBlock32) : size_t(k / 256) * sizeof(ActBlock256);
}

void quantize_act_row(QuantType t, const float* x, void* dst, int64_t k) {
    if (quant_block_elems(t) == 32) {
        ActBlock32* b = static_cast<ActBlock32*>(dst);
        for (int64_t i = 0; i < k / 32; ++i) b[i].d = quantize_block(x + 32 * i, b[i].qs, 32);
        return;
    }
    ActBlock256* b = static_cast<ActBlock256*>(dst);
    for (int64_t i = 0; i < k / 256; ++i) {
        b[i].d = quantize_block(x + 256 * i, b[i].qs, 256);
        for (int j = 0; j < 16; ++j) {
            int s = 0;
            for (int l = 0; l < 16; ++l) s += b[i].qs[16 * j + l];
            b[i].bsums[j] = int16_t(s);
        }
    }
}

#ifdef DYLLM_QUANT_DOT_X86

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
// GCC 12's AVX-512 conversion intrinsics pass an undefined vector as the unused merge source, which its uninitialized
// warnings report inside immintrin's headers (a known false positive).
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// GCC takes a target for the functions up to pop_options, clang one attribute applied to each function.
#if defined(__clang__)
#pragma clang attribute push( \
    __attribute__((target("avx2,fma,bmi2,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4,avx512vnni")
#endif
namespace vnni512 {
inline __m256i dot4(__m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
}
inline __m256i scale_vec(int a, int b) {
    return _mm256_setr_epi32(a, a, a, a, b, b, b, b);
}
inline __m256i dot4s(__m256i u, __m256i s, __m256i sv) {
    return _mm256_mullo_epi32(dot4(u, s), sv);
}
#include "kernels/cpu/quant_dot_kernels.inc"

// The K-quants in 64-byte vectors: a zmm holds 64 levels (two Q4_K sub-blocks, four Q6_K ones) and tiles are up to 8
// x rows by one W row, so a W block's unpacked levels and scale vectors (kept in registers) serve 8 rows. pmaddubsw's
// int16 pairs (no saturation: levels <= 63) go through vpdpwssd with the sub-blocks' int16 scales, which multiplies
// and accumulates in one instruction: vpdpbusd followed by a vpmulld per sub-block measured about 1.2x slower on the
// dense product (vpmulld is two uops on the port vpdpbusd uses). The lanes
// differ from the 8-lane kernels above (16 lanes, then _mm512_reduce_add_ps): within the same bound of the exact
// integer sums, not their bits.
inline __m512i zload(const void* p) {
    return _mm512_loadu_si512(p);
}
inline __m512i join(__m256i lo, __m256i hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

template <int NR>
void tile512_q4_k(const uint8_t* const* xr, const uint8_t* w, int64_t nb, float* out) {
    __m512 acc[NR];
    for (int r = 0; r < NR; ++r) acc[r] = _mm512_setzero_ps();
    const __m512i m4 = _mm512_set1_epi8(15);
    for (int64_t b = 0; b < nb; ++b) {
        const BlockQ4_K* wb = reinterpret_cast<const BlockQ4_K*>(w) + b;
        uint64_t         sc8;
        __m128i          mn8;
        q4k_scales_mins(wb->scales, &sc8, &mn8);
        const __m256i scv = _mm256_broadcastsi128_si256(_mm_cvtsi64_si128(int64_t(sc8)));
        __m512i       lv[4], sv[4];
        for (int g = 0; g < 4; ++g) {
            const __m256i q = load32(wb->qs + 32 * g);
            lv[g]           = _mm512_and_si512(join(q, _mm256_srli_epi16(q, 4)), m4);
            // int16 lanes 0-15 (elements 0-31 of the chunk): sub-block 2g's scale, 16-31: 2g + 1's.
            const __m256i idx = _mm256_setr_m128i(_mm_set1_epi8(char(2 * g)), _mm_set1_epi8(char(2 * g + 1)));
            sv[g]             = _mm512_cvtepu8_epi16(_mm256_shuffle_epi8(scv, idx));
        }
        const __m256i mv = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mn8, mn8));  // m0 m0 m1 m1 .. m7 m7
        const __m512  dw = _mm512_set1_ps(h2f(wb->d)), dm = _mm512_set1_ps(h2f(wb->dmin));
        for (int r = 0; r < NR; ++r) {
            const ActBlock256* xb = reinterpret_cast<const ActBlock256*>(xr[r]) + b;
            __m512i            s  = _mm512_setzero_si512();
            for (int g = 0; g < 4; ++g)
                s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(lv[g], zload(xb->qs + 64 * g)), sv[g]);
            const __m512i m = _mm512_zextsi256_si512(_mm256_madd_epi16(load32(xb->bsums), mv));
            const __m512  t = _mm512_fnmadd_ps(dm, _mm512_cvtepi32_ps(m), _mm512_mul_ps(dw, _mm512_cvtepi32_ps(s)));
            acc[r]          = _mm512_fmadd_ps(_mm512_set1_ps(xb->d), t, acc[r]);
        }
    }
    for (int r = 0; r < NR; ++r) out[r] = _mm512_reduce_add_ps(acc[r]);
}

template <int NR>
void tile512_q6_k(const uint8_t* const* xr, const uint8_t* w, int64_t nb, float* out) {
    __m512 acc[NR];
    for (int r = 0; r < NR; ++r) acc[r] = _mm512_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    for (int64_t b = 0; b < nb; ++b) {
        const BlockQ6_K* wb = reinterpret_cast<const BlockQ6_K*>(w) + b;
        __m512i          lv[4], sv[4];
        for (int h = 0; h < 2; ++h) {
            const __m256i l0 = load32(wb->ql + 64 * h), l1 = load32(wb->ql + 64 * h + 32);
            const __m256i qh = load32(wb->qh + 32 * h);
            const __m256i q0 =
                _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
            const __m256i q1 = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
            const __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4));
            const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4));
            lv[2 * h]        = join(q0, q1);
            lv[2 * h + 1]    = join(q2, q3);
        }
        const __m128i scv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb->scales));
        const __m256i scb = _mm256_broadcastsi128_si256(scv);
        for (int c = 0; c < 4; ++c) {
            // int16 lanes 8 i .. 8 i + 7 (elements 16 i .. 16 i + 15 of the chunk): sub-block 4 c + i's scale.
            const __m256i idx = _mm256_setr_m128i(
                _mm_setr_epi8(char(4 * c), char(4 * c), char(4 * c), char(4 * c), char(4 * c), char(4 * c), char(4 * c),
                              char(4 * c), char(4 * c + 1), char(4 * c + 1), char(4 * c + 1), char(4 * c + 1),
                              char(4 * c + 1), char(4 * c + 1), char(4 * c + 1), char(4 * c + 1)),
                _mm_setr_epi8(char(4 * c + 2), char(4 * c + 2), char(4 * c + 2), char(4 * c + 2), char(4 * c + 2),
                              char(4 * c + 2), char(4 * c + 2), char(4 * c + 2), char(4 * c + 3), char(4 * c + 3),
                              char(4 * c + 3), char(4 * c + 3), char(4 * c + 3), char(4 * c + 3), char(4 * c + 3),
                              char(4 * c + 3)));
            sv[c] = _mm512_cvtepi8_epi16(_mm256_shuffle_epi8(scb, idx));
        }
        const __m256i sc16 = _mm256_cvtepi8_epi16(scv);
        const float   dw   = h2f(wb->d);
        for (int r = 0; r < NR; ++r) {
            const ActBlock256* xb = reinterpret_cast<const ActBlock256*>(xr[r]) + b;
            __m512i            s  = _mm512_setzero_si512();
            for (int c = 0; c < 4; ++c)
                s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(lv[c], zload(xb->qs + 64 * c)), sv[c]);
            const __m512i off = _mm512_zextsi256_si512(_mm256_madd_epi16(load32(xb->bsums), sc16));
            s                 = _mm512_sub_epi32(s, _mm512_slli_epi32(off, 5));
            acc[r]            = _mm512_fmadd_ps(_mm512_set1_ps(xb->d * dw), _mm512_cvtepi32_ps(s), acc[r]);
        }
    }
    for (int r = 0; r < NR; ++r) out[r] = _mm512_reduce_add_ps(acc[r]);
}

template <int NR>
void tile512(QuantType t, const uint8_t* const* xr, const uint8_t* w, int64_t nb, float* out) {
    if (t == QuantType::Q4_K)
        tile512_q4_k<NR>(xr, w, nb, out);
    else
        tile512_q6_k<NR>(xr, w, nb, out);
}

constexpr int kTileX512 = 8;

void rows512(const void* xq, size_t xs, int64_t n, QuantMat w, int64_t o0, int64_t o1, MatF y) {
    if (w.type != QuantType::Q4_K && w.type != QuantType::Q6_K) return rows(xq, xs, n, w, o0, o1, y);
    using Fn                           = void (*)(QuantType, const uint8_t* const*, const uint8_t*, int64_t, float*);
    static constexpr Fn fns[kTileX512] = {tile512<1>, tile512<2>, tile512<3>, tile512<4>,
                                          tile512<5>, tile512<6>, tile512<7>, tile512<8>};
    const int64_t       nb             = w.cols / quant_block_elems(w.type);
    const uint8_t*      x0             = static_cast<const uint8_t*>(xq);
    for (int64_t o = o0; o < o1; ++o) {
        const uint8_t* wr = static_cast<const uint8_t*>(w.row_ptr(o));
        for (int64_t i = 0; i < n; i += kTileX512) {
            const int      nr = int(std::min<int64_t>(kTileX512, n - i));
            const uint8_t* xr[kTileX512];
            for (int r = 0; r < nr; ++r) xr[r] = x0 + size_t(i + r) * xs;
            float out[kTileX512];
            fns[nr - 1](w.type, xr, wr, nb, out);
            for (int r = 0; r < nr; ++r) y.row(i + r)[o - o0] = out[r];
        }
    }
}
}  // namespace vnni512
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,bmi2,f16c,avxvnni"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3,avxvnni")
#endif
namespace avxvnni {
inline __m256i dot4(__m256i u, __m256i s) {
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s);
}
inline __m256i scale_vec(int a, int b) {
    return _mm256_setr_epi32(a, a, a, a, b, b, b, b);
}
inline __m256i dot4s(__m256i u, __m256i s, __m256i sv) {
    return _mm256_mullo_epi32(dot4(u, s), sv);
}
#include "kernels/cpu/quant_dot_kernels.inc"
}  // namespace avxvnni
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,bmi2,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
#endif
namespace avx2 {
// pmaddubsw's pairwise int16 sums: |u| <= 128 (signed weights) or <= 63 (Q6_K levels), |s| <= 127, so a pair stays
// within 2 * 128 * 127 < 2^15 and never saturates; pmaddwd then sums pairs into the same 4-byte lanes as vpdpbusd.
inline __m256i dot4(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}
inline __m256i scale_vec(int a, int b) {
    return _mm256_set_m128i(_mm_set1_epi16(int16_t(b)), _mm_set1_epi16(int16_t(a)));
}
inline __m256i dot4s(__m256i u, __m256i s, __m256i sv) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), sv);
}
#include "kernels/cpu/quant_dot_kernels.inc"
}  // namespace avx2
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#pragma GCC diagnostic pop

#endif

bool cpuid_bit(unsigned leaf, unsigned sub, int reg, int bit) {
#ifdef DYLLM_QUANT_DOT_X86
    unsigned r[4] = {};
    if (!__get_cpuid_count(leaf, sub, &r[0], &r[1], &r[2], &r[3])) return false;
    return (r[reg] >> bit) & 1u;
#else
    (void)leaf;
    (void)sub;
    (void)reg;
    (void)bit;
    return false;
#endif
}

bool cpu_has_x86_64_v3() {
#ifdef DYLLM_QUANT_DOT_X86
    static const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                           __builtin_cpu_supports("bmi2") && cpuid_bit(1, 0, 2, 29);
    return v3;
#else
    return false;
#endif
}

bool cpu_has_x86_64_v4() {
#ifdef DYLLM_QUANT_DOT_X86
    static const bool v4 = cpu_has_x86_64_v3() && __builtin_cpu_supports("avx512f") &&
                           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                           __builtin_cpu_supports("avx512vl");
    return v4;
#else
    return false;
#endif
}

bool dot_isa_available(DotIsa isa) {
#ifdef DYLLM_QUANT_DOT_X86
    switch (isa) {
        case DotIsa::Vnni512:
            return cpu_has_x86_64_v4() && __builtin_cpu_supports("avx512vnni");
        case DotIsa::AvxVnni:
            return cpu_has_x86_64_v3() && cpuid_bit(7, 1, 0, 4);
        case DotIsa::Avx2:
            return cpu_has_x86_64_v3();
    }
#endif
    (void)isa;
    return false;
}

const char* dot_isa_name(DotIsa isa) {
    switch (isa) {
        case DotIsa::Vnni512:
            return "avx512-vnni";
        case DotIsa::AvxVnni:
            return "avx-vnni";
        case DotIsa::Avx2:
            return "avx2";
    }
    return "?";
}

void quant_dot_rows(DotIsa isa, const void* xq, size_t xq_stride, int64_t n, QuantMat w, int64_t o0, int64_t o1,
                    MatF y) {
#ifdef DYLLM_QUANT_DOT_X86
    switch (isa) {
        case DotIsa::Vnni512:
            return vnni512::rows512(xq, xq_stride, n, w, o0, o1, y);
        case DotIsa::AvxVnni:
            return avxvnni::rows(xq, xq_stride, n, w, o0, o1, y);
        case DotIsa::Avx2:
            return avx2::rows(xq, xq_stride, n, w, o0, o1, y);
    }
#else
    (void)isa, (void)xq, (void)xq_stride, (void)n, (void)w, (void)o0, (void)o1, (void)y;
#endif
}

}  // namespace dyllm::cpu
