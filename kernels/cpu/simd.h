// Vectorisable inner loops shared by the optimised CPU kernels. Written with 16 independent fp32 lanes so the compiler
// vectorises them without reassociating (no -ffast-math); the callers are compiled per ISA with target_clones.
#pragma once
#include <cstdint>

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
// One clone per ISA level, picked at load time by the dynamic loader (ifunc): AVX-512, AVX2+FMA, or baseline SSE2.
#define DYLLM_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DYLLM_CPU_CLONES
#endif

#define DYLLM_ALWAYS_INLINE inline __attribute__((always_inline))

namespace dyllm::cpu::simd {

constexpr int kLanes = 16;

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

// y[c] += alpha * x[c]
DYLLM_ALWAYS_INLINE void axpy(float* y, float alpha, const float* x, int64_t n) {
    for (int64_t c = 0; c < n; ++c) y[c] += alpha * x[c];
}

// sum_c a[c]^2
DYLLM_ALWAYS_INLINE float sum_sq(const float* a, int64_t n) { return dot(a, a, n); }

}  // namespace dyllm::cpu::simd
