// Vectorisable inner loops shared by the optimised CPU kernels. Written with 16 independent fp32 lanes so the compiler
// vectorises them without reassociating (no -ffast-math); the callers are compiled per ISA with target_clones.
#pragma once
#include <cstdint>

// Sanitizer builds go without: their instrumented ifunc resolvers run before the sanitizer runtime is up (TSan crashes
// at load). GCC defines __SANITIZE_*__; clang answers __has_feature.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define DYLLM_SANITIZED_BUILD 1
#endif
#endif
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) && \
    !defined(DYLLM_SANITIZED_BUILD)
// One clone per ISA level, picked at load time by the dynamic loader (ifunc): AVX-512, AVX2+FMA, or baseline SSE2.
#define DYLLM_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DYLLM_CPU_CLONES
#endif

#define DYLLM_ALWAYS_INLINE inline __attribute__((always_inline))

// The 16-lane helpers below are always inlined into their (per-ISA) callers, so the ABI of passing a 64-byte vector
// by value never applies; silence GCC's note about it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace dyllm::cpu::simd {

constexpr int kLanes = 16;

// Whether a 16-lane value is one register (AVX-512: 32 zmm). The register-blocked tiles (small_gemm, the attention
// scores and P x V) are sized by it: elsewhere a 16-lane value is two ymm (or four xmm), the AVX-512 tiles spill, and
// tiles of 8-lane vectors sized for 16 ymm run instead. Each tile keeps every output's order: the same bits either way.
inline bool wide_registers() {
#if defined(__x86_64__) && defined(__GNUC__)
    static const bool wide = __builtin_cpu_supports("avx512f");
    return wide;
#else
    return false;
#endif
}

// N fp32 / int32 lanes as one value (N = 16: one zmm under AVX-512, two ymm under AVX2, four xmm otherwise; N = 4 or 8
// for kernels whose vectors run over a few query rows); aligned(4) lets them load from and store to any float row.
template <int N>
struct Lanes {
    typedef float   F __attribute__((vector_size(4 * N), aligned(4)));
    typedef int32_t I __attribute__((vector_size(4 * N), aligned(4)));
};
typedef Lanes<16>::F V16;
typedef Lanes<16>::I I16;

template <int N>
DYLLM_ALWAYS_INLINE typename Lanes<N>::F load(const float* p) {
    return *reinterpret_cast<const typename Lanes<N>::F*>(p);
}
template <int N>
DYLLM_ALWAYS_INLINE void store(float* p, typename Lanes<N>::F v) {
    *reinterpret_cast<typename Lanes<N>::F*>(p) = v;
}
DYLLM_ALWAYS_INLINE V16 load16(const float* p) {
    return load<16>(p);
}
DYLLM_ALWAYS_INLINE void store16(float* p, V16 v) {
    store<16>(p, v);
}

// exp(x) = p * 2^n for x <= 0 (a max-subtracted softmax argument), N lanes, before the scaling: Cody-Waite reduction
// x = n ln2 + r with |r| <= ln2 / 2, then the degree-7 Taylor polynomial p of e^r (truncation error r^8 / 8! < 5e-9
// relative, so the result is within ~2 ulp of expf). Inputs below -87.3 are clamped there (e^-87.3 ~ 1e-38,
// negligible next to the softmax maximum's weight of 1), so n >= -126.
template <int N>
struct ExpReduced {
    typename Lanes<N>::F p;
    typename Lanes<N>::I n;
};
template <int N>
DYLLM_ALWAYS_INLINE ExpReduced<N> exp_nonpos_reduced(typename Lanes<N>::F x) {
    using F    = typename Lanes<N>::F;
    using I    = typename Lanes<N>::I;
    const F lo = F{} - 87.3f;
    x          = x < lo ? lo : x;
    const F t  = x * 1.44269504088896341f;              // x / ln 2
    const I n  = __builtin_convertvector(t - 0.5f, I);  // round to nearest for t <= 0 (truncation toward 0)
    const F nf = __builtin_convertvector(n, F);
    F       r  = x - nf * 0.693145751953125f;      // ln2 split in a high part exact in fp32 ...
    r          = r - nf * 1.428606765330187e-06f;  // ... and the low remainder (Cody-Waite)
    F p        = F{} + (1.0f / 5040.0f);
    p          = p * r + (1.0f / 720.0f);
    p          = p * r + (1.0f / 120.0f);
    p          = p * r + (1.0f / 24.0f);
    p          = p * r + (1.0f / 6.0f);
    p          = p * r + 0.5f;
    p          = p * r + 1.0f;
    p          = p * r + 1.0f;
    return {p, n};
}

// exp(x) for x <= 0: p * 2^n by adding n to p's exponent field, an integer add where the multiply by 2^n took one of
// the FMA pipes' slots, which the exp shares with the attention's products (`bench_kernels_cpu --attention --shape
// 1,336,4,4,32`, Zen 4, 3 alternations: exact attention 85.8-86.0 -> 86.3-86.9 GFLOP/s, approximate 73.7-73.9 ->
// 75.0, the same output hashes). The same bits as the multiply: p lies in [0.70, 1.42] and n >= -126,
// and where n = -126 (x in [-87.3, -86.99]) r >= 0.036 makes p > 1, so p * 2^n is always a normal number, exact,
// whose exponent is p's plus n. A NaN x converts to n = INT_MIN, whose shifted bits are 0: the NaN passes unchanged.
// Lane-wise: the same bits at any N.
template <int N>
DYLLM_ALWAYS_INLINE typename Lanes<N>::F exp_nonpos_n(typename Lanes<N>::F x) {
    using F                 = typename Lanes<N>::F;
    using I                 = typename Lanes<N>::I;
    const ExpReduced<N> red = exp_nonpos_reduced<N>(x);
    I                   bits;
    __builtin_memcpy(&bits, &red.p, sizeof bits);
    bits += red.n << 23;  // C++20: a left shift of a negative value is defined (modulo 2^32)
    F e;
    __builtin_memcpy(&e, &bits, sizeof e);
    return e;
}
DYLLM_ALWAYS_INLINE V16 exp_nonpos(V16 x) {
    return exp_nonpos_n<16>(x);
}

// x[0..N) <- its transpose (N x N, N = 8 or 16): log2 N rounds of interleaving row i with row i + N / 2 (the perfect
// shuffle).
template <int N>
DYLLM_ALWAYS_INLINE void transpose(typename Lanes<N>::F* x) {
    using V = typename Lanes<N>::F;
    for (int round = 0; (1 << round) < N; ++round) {
        V y[N];
#pragma GCC unroll 8
        for (int i = 0; i < N / 2; ++i) {
            if constexpr (N == 16) {
                y[2 * i] =
                    __builtin_shufflevector(x[i], x[i + 8], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
                y[2 * i + 1] = __builtin_shufflevector(x[i], x[i + 8], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14,
                                                       30, 15, 31);
            } else {
                static_assert(N == 8);
                y[2 * i]     = __builtin_shufflevector(x[i], x[i + 4], 0, 8, 1, 9, 2, 10, 3, 11);
                y[2 * i + 1] = __builtin_shufflevector(x[i], x[i + 4], 4, 12, 5, 13, 6, 14, 7, 15);
            }
        }
#pragma GCC unroll 16
        for (int i = 0; i < N; ++i) x[i] = y[i];
    }
}

// qt[c * ldq + r] <- row(r)[c] for r < n and c < D (zero columns r from n up to ldq), in TL x TL blocks through
// registers; row(r) returns row r's first float. ldq and D are multiples of TL.
template <int TL, class RowFn>
DYLLM_ALWAYS_INLINE void transpose_rows(RowFn row, int n, int D, int64_t ldq, float* qt) {
    using V = typename Lanes<TL>::F;
    for (int64_t r0 = 0; r0 < ldq; r0 += TL)
        for (int c0 = 0; c0 < D; c0 += TL) {
            V x[TL];
            for (int i = 0; i < TL; ++i) x[i] = r0 + i < n ? load<TL>(row(int(r0) + i) + c0) : V{};
            transpose<TL>(x);
            for (int i = 0; i < TL; ++i) store<TL>(qt + (c0 + i) * ldq + r0, x[i]);
        }
}

// sum_c a[c] * b[c]
DYLLM_ALWAYS_INLINE float dot(const float* a, const float* b, int64_t n) {
    float   acc[kLanes] = {};
    int64_t c           = 0;
    for (; c + kLanes <= n; c += kLanes)
        for (int l = 0; l < kLanes; ++l) acc[l] += a[c + l] * b[c + l];
    for (; c < n; ++c) acc[0] += a[c] * b[c];
    float s = 0.0f;
    for (int l = 0; l < kLanes; ++l) s += acc[l];
    return s;
}

// sum_c a[c]^2
DYLLM_ALWAYS_INLINE float sum_sq(const float* a, int64_t n) {
    return dot(a, a, n);
}

}  // namespace dyllm::cpu::simd

#pragma GCC diagnostic pop
