// The integer dot-product path (kernels/cpu/quant_dot.h): activation quantization, and the block kernels of
// quant_dot_kernels.inc compiled for AVX512-VNNI, AVX-VNNI and AVX2.
#include "kernels/cpu/quant_dot.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/ref/quant.h"
#include "kernels/cpu/simd.h"

#if defined(__GNUC__) && defined(__x86_64__)
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

#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4,avx512vnni")
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
}  // namespace vnni512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3,avxvnni")
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
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
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
#pragma GCC pop_options

#pragma GCC diagnostic pop

#endif

bool dot_isa_available(DotIsa isa) {
#ifdef DYLLM_QUANT_DOT_X86
    switch (isa) {
        case DotIsa::Vnni512:
            return __builtin_cpu_supports("x86-64-v4") && __builtin_cpu_supports("avx512vnni");
        case DotIsa::AvxVnni:
            return __builtin_cpu_supports("x86-64-v3") && __builtin_cpu_supports("avxvnni");
        case DotIsa::Avx2:
            return __builtin_cpu_supports("x86-64-v3");
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
            return vnni512::rows(xq, xq_stride, n, w, o0, o1, y);
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
