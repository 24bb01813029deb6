// The AMX-BF16 quantized product (kernels/cpu/quant_amx.h). W is the A operand: a panel of 16 W rows decoded to bf16
// is, per 32 elements of k, one 16 x 64-byte tile in W's own row-major order, so decoding needs no transpose; x is
// the B operand, packed once per product into the pair layout TDPBF16PS reads (B row r, column c: x[c][2r],
// x[c][2r + 1]). The 16 x 16 fp32 sums (W rows x x rows) are accumulated by TDPBF16PS in tile registers over a chunk
// of 256 elements of k and kept in memory between chunks. Instruction semantics: Intel Architecture Instruction Set
// Extensions Programming Reference (TDPBF16PS, VCVTNE2PS2BF16, LDTILECFG).
#include "kernels/cpu/quant_amx.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/common/dtype_convert.h"
#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/ref/quant.h"
#include "kernels/cpu/quant_dot.h"

#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__)
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define DYLLM_QUANT_AMX 1
#endif

namespace dyllm::cpu {

#ifdef DYLLM_QUANT_AMX

namespace {

using amx_tiles::aligned_scratch;
using amx_tiles::memory_barrier;
using amx_tiles::TileConfig;

constexpr int64_t kTile  = 16;                 // W rows per panel, x rows per x tile
constexpr int64_t kStep  = 32;                 // elements of k per tile step (16 bf16 pairs, 64 bytes a tile row)
constexpr int64_t kWords = kTile * kStep / 2;  // 32-bit words (bf16 pairs) of one tile: 1 KiB
constexpr int     kGroup = 3;                  // x tiles per pass over a panel: tmm0 W, tmm1-3 x, tmm4-6 the sums
// Elements of k per pass over the panels: one K-quant block, eight 32-element ones. 512 measured ~1.1x slower on the
// 33-row Q4_K product (3 x tiles' chunk, 48 KiB, no longer fits L1).
constexpr int64_t kChunk = 256;

// Linux (5.16+) hands out the 8 KiB tile data state only on request: ARCH_REQ_XCOMP_PERM (0x1023) for
// XFEATURE_XTILEDATA (18), process-wide (Documentation/arch/x86/xstate.rst). Without it a tile instruction faults.
bool request_tile_data() {
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
}

bool detect() {
    // CPUID leaf 7: EDX bit 22 AMX-BF16, bit 24 AMX-TILE; sub-leaf 1 EAX bit 5 AVX512-BF16 (the decoders' rounding).
    return cpu_has_x86_64_v4() && cpuid_bit(7, 0, 3, 22) && cpuid_bit(7, 0, 3, 24) && cpuid_bit(7, 1, 0, 5) &&
           request_tile_data();
}

TileConfig make_config() {
    TileConfig cfg;
    for (int i = 0; i <= 2 * kGroup; ++i) {
        cfg.rows[i]  = uint8_t(kTile);
        cfg.colsb[i] = uint16_t(kStep * 2);
    }
    return cfg;
}

}  // namespace

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
// GCC 12's AVX-512 conversion intrinsics pass an undefined vector as the unused merge source, which its uninitialized
// warnings report inside immintrin's headers (a known false positive).
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,bmi2,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16," \
                                                   "amx-tile,amx-bf16"))),                                             \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4,avx512bf16,amx-tile,amx-bf16")
#endif
namespace amx {

// x tile t (rows 16 t ..) in the B layout, steps of 256 words: word r * 16 + c of step s holds bf16(x[16 t + c][32 s
// + 2 r]) low and bf16(x[16 t + c][32 s + 2 r + 1]) high, rounded to nearest even by VCVTNE2PS2BF16 (fp32 denormals
// flushed to zero: an error below 2^-126 |w| per product); rows past n are zeros.
void pack_x_tile(CMatF x, int64_t t, int64_t steps, uint32_t* dst) {
    const int64_t rows = std::min(kTile, x.rows - kTile * t);
    if (rows < kTile) std::fill(dst, dst + steps * kWords, 0u);
    const __m512i pos = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32(int(kTile)));
    for (int64_t c = 0; c < rows; ++c) {
        const float* xr = x.row(kTile * t + c);
        for (int64_t s = 0; s < steps; ++s) {
            const __m512bh v =
                _mm512_cvtne2ps_pbh(_mm512_loadu_ps(xr + kStep * s + 16), _mm512_loadu_ps(xr + kStep * s));
            _mm512_i32scatter_epi32(dst + s * kWords + c, pos, (__m512i)v, 4);
        }
    }
}

// The decoders below write one W row of a panel: elements 32 c .. 32 c + 31 as the 64-byte row of step c's A tile
// (dst + c * 512). Each value is dequantize_row's fp32 value (kernels/cpu/quant_decode.h: the same products of the
// same fp32 factors; where dequantize_row multiplies then subtracts, the product is exact, an fp16 scale times a
// 6-bit scale times a level of at most 5 bits, so a fused multiply-subtract rounds the same), rounded to nearest
// even by VCVTNE2PS2BF16. That instruction flushes fp32 denormals, which no decoded value is: each is zero or at least
// fp16's smallest step, 2^-24, times a level's or a difference's spacing, far above 2^-126. The 4- and 5-bit types
// round each sub-block's 16 or 32 possible values once into a table and look the levels up (VPERMW).
inline void put(uint16_t* dst, int64_t c, __m512i v) {
    _mm512_store_si512(dst + c * 2 * kWords, v);
}
// bf16 of lo (words 0-15) and hi (words 16-31).
inline __m512i bf16_of(__m512 lo, __m512 hi) {
    const __m512bh v = _mm512_cvtne2ps_pbh(hi, lo);
    return (__m512i)v;
}
// Makes the compiler read f[0 .. n) back from memory: its broadcasts then load (load ports) instead of shuffling
// registers (port 5, which the table lookups and conversions already fill; the 33-row Q4_K product
// measured ~1.1x faster).
inline void from_memory(float* f, int n) {
    asm volatile("" : : "r"(f), "r"(n) : "memory");
}
inline __m512 iota16(float first) {
    return _mm512_add_ps(_mm512_set1_ps(first), _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}
inline __m256i load256(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
inline __m128i load128(const void* p) {
    return _mm_loadu_si128(static_cast<const __m128i*>(p));
}

void row_q8_0(const BlockQ8_0* b, int64_t nb, uint16_t* dst) {
    for (int64_t i = 0; i < nb; ++i) {
        const __m512 d  = _mm512_set1_ps(_cvtsh_ss(b[i].d));
        const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(load128(b[i].qs)));
        const __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(load128(b[i].qs + 16)));
        put(dst, i, bf16_of(_mm512_mul_ps(d, lo), _mm512_mul_ps(d, hi)));
    }
}

void row_q4_0(const BlockQ4_0* b, int64_t nb, uint16_t* dst) {
    const __m512 levels = iota16(-8.0f);  // q - 8 for q = 0 .. 15
    for (int64_t i = 0; i < nb; ++i) {
        const __m512  v     = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(b[i].d)), levels);
        const __m512i table = bf16_of(v, v);
        const __m256i q     = _mm256_cvtepu8_epi16(load128(b[i].qs));
        const __m512i idx   = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(q, _mm256_set1_epi16(15))),
                                                 _mm256_srli_epi16(q, 4), 1);
        put(dst, i, _mm512_permutexvar_epi16(idx, table));
    }
}

// A K-quant block's 8 sub-block factors d * sc_j and dmin * m_j (quant_k_scale_min's 6-bit values, unpacked in 32-bit
// words four at a time), as dequantize_row computes them, into ds[8] and ns[8].
inline void k_factors(const uint8_t* q, float d, float dmin, float* ds, float* ns) {
    uint32_t u0, u1, u2;
    std::memcpy(&u0, q, 4);
    std::memcpy(&u1, q + 4, 4);
    std::memcpy(&u2, q + 8, 4);
    const uint32_t s_lo = u0 & 0x3f3f3f3fu, m_lo = u1 & 0x3f3f3f3fu;
    const uint32_t s_hi = (u2 & 0x0f0f0f0fu) | (((u0 >> 6) & 0x03030303u) << 4);
    const uint32_t m_hi = ((u2 >> 4) & 0x0f0f0f0fu) | (((u1 >> 6) & 0x03030303u) << 4);
    const __m128i  sc   = _mm_cvtsi64_si128(int64_t(uint64_t(s_lo) | (uint64_t(s_hi) << 32)));
    const __m128i  mn   = _mm_cvtsi64_si128(int64_t(uint64_t(m_lo) | (uint64_t(m_hi) << 32)));
    _mm256_store_ps(ds, _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sc))));
    _mm256_store_ps(ns, _mm256_mul_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(mn))));
    from_memory(ds, 8);
    from_memory(ns, 8);
}

void row_q4_k(const BlockQ4_K* b, int64_t nb, uint16_t* dst) {
    const __m512  levels = iota16(0.0f);
    const __m512i m4 = _mm512_set1_epi16(15), sixteen = _mm512_set1_epi16(16);
    for (int64_t i = 0; i < nb; ++i) {
        alignas(32) float ds[8], ns[8];
        k_factors(b[i].scales, _cvtsh_ss(b[i].d), _cvtsh_ss(b[i].dmin), ds, ns);
        for (int g = 0; g < 4; ++g) {
            // Words 0-15: sub-block 2g's values of levels 0-15, 16-31: sub-block 2g + 1's.
            const __m512i table =
                bf16_of(_mm512_fmsub_ps(_mm512_set1_ps(ds[2 * g]), levels, _mm512_set1_ps(ns[2 * g])),
                        _mm512_fmsub_ps(_mm512_set1_ps(ds[2 * g + 1]), levels, _mm512_set1_ps(ns[2 * g + 1])));
            const __m512i q = _mm512_cvtepu8_epi16(load256(b[i].qs + 32 * g));
            put(dst, 8 * i + 2 * g, _mm512_permutexvar_epi16(_mm512_and_si512(q, m4), table));
            put(dst, 8 * i + 2 * g + 1,
                _mm512_permutexvar_epi16(_mm512_or_si512(_mm512_srli_epi16(q, 4), sixteen), table));
        }
    }
}

// Words shifted left by S bits (right by -S).
template <int S>
inline __m512i shift_words(__m512i v) {
    if constexpr (S >= 0)
        return _mm512_slli_epi16(v, S);
    else
        return _mm512_srli_epi16(v, -S);
}

// Q5_K's group g (sub-blocks 2 g and 2 g + 1): the level's fifth bit is qh's bit 2 g (2 g + 1), shifted to the index's
// bit 4 and merged under the low four bits by one bitwise select; VPERMW reads only an index's bits 0-4. Measured
// ~1.06x faster on the 33-row 4096 x 4096 product than masking, shifting and or-ing the bit in.
template <int G>
inline void q5_k_group(const BlockQ5_K& b, const float* ds, const float* ns, __m512i qh, uint16_t* dst, int64_t c) {
    const __m512  lo_levels = iota16(0.0f), hi_levels = iota16(16.0f);
    const __m512i low4 = _mm512_set1_epi16(15);
    const __m512  d0 = _mm512_set1_ps(ds[2 * G]), n0 = _mm512_set1_ps(ns[2 * G]);
    const __m512  d1 = _mm512_set1_ps(ds[2 * G + 1]), n1 = _mm512_set1_ps(ns[2 * G + 1]);
    const __m512i t0 = bf16_of(_mm512_fmsub_ps(d0, lo_levels, n0), _mm512_fmsub_ps(d0, hi_levels, n0));
    const __m512i t1 = bf16_of(_mm512_fmsub_ps(d1, lo_levels, n1), _mm512_fmsub_ps(d1, hi_levels, n1));
    const __m512i q  = _mm512_cvtepu8_epi16(load256(b.qs + 32 * G));
    const __m512i i0 = _mm512_ternarylogic_epi64(q, shift_words<4 - 2 * G>(qh), low4, 0xE4);  // c ? a : b
    const __m512i i1 = _mm512_ternarylogic_epi64(_mm512_srli_epi16(q, 4), shift_words<3 - 2 * G>(qh), low4, 0xE4);
    put(dst, c, _mm512_permutexvar_epi16(i0, t0));
    put(dst, c + 1, _mm512_permutexvar_epi16(i1, t1));
}

void row_q5_k(const BlockQ5_K* b, int64_t nb, uint16_t* dst) {
    for (int64_t i = 0; i < nb; ++i) {
        alignas(32) float ds[8], ns[8];
        k_factors(b[i].scales, _cvtsh_ss(b[i].d), _cvtsh_ss(b[i].dmin), ds, ns);
        const __m512i qh = _mm512_cvtepu8_epi16(load256(b[i].qh));
        q5_k_group<0>(b[i], ds, ns, qh, dst, 8 * i);
        q5_k_group<1>(b[i], ds, ns, qh, dst, 8 * i + 2);
        q5_k_group<2>(b[i], ds, ns, qh, dst, 8 * i + 4);
        q5_k_group<3>(b[i], ds, ns, qh, dst, 8 * i + 6);
    }
}

void row_q6_k(const BlockQ6_K* b, int64_t nb, uint16_t* dst) {
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3), off = _mm256_set1_epi8(32);
    for (int64_t i = 0; i < nb; ++i) {
        // d * scales[j] for the 16 sub-blocks, as dequantize_row computes them.
        alignas(64) float ds[16];
        _mm512_store_ps(ds, _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(b[i].d)),
                                          _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(load128(b[i].scales)))));
        from_memory(ds, 16);
        for (int h = 0; h < 2; ++h) {
            // Quarter p of half h (elements 128 h + 32 p ..): low bits from ql[32 (p & 1)] nibble p >> 1, high bits
            // from qh >> 2 p; its two 16-element sub-blocks have scales[8 h + 2 p], scales[8 h + 2 p + 1].
            const __m256i l0 = load256(b[i].ql + 64 * h), l1 = load256(b[i].ql + 64 * h + 32);
            const __m256i qh = load256(b[i].qh + 32 * h);
            __m256i       q[4];
            q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
            q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
            q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4));
            q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4));
            for (int p = 0; p < 4; ++p) {
                const __m256i s   = _mm256_sub_epi8(q[p], off);
                const __m512  lo  = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(s)));
                const __m512  hi  = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(s, 1)));
                const __m512  ds0 = _mm512_set1_ps(ds[8 * h + 2 * p]), ds1 = _mm512_set1_ps(ds[8 * h + 2 * p + 1]);
                put(dst, 8 * i + 4 * h + p, bf16_of(_mm512_mul_ps(ds0, lo), _mm512_mul_ps(ds1, hi)));
            }
        }
    }
}

// Rows r0 .. r1 of one panel's chunk: elements e0 .. e0 + len (whole blocks) of W rows o0 + r as bf16 A tiles, one
// per 32 elements (element r * 32 + j of tile s is row o0 + r's element e0 + 32 s + j); rows past W's end are zeros.
// Each row's next chunk is fetched ahead (it is decoded one sweep over the task's panels later).
template <class Block, void (*row_fn)(const Block*, int64_t, uint16_t*)>
void decode_rows_of(QuantMat w, int64_t o0, int64_t r0, int64_t r1, int64_t e0, int64_t len, uint16_t* a) {
    const int64_t be = quant_block_elems(w.type), b0 = e0 / be, nb = len / be;
    const int64_t next = std::min(kChunk, w.cols - e0 - len) / be;
    for (int64_t r = r0; r < r1; ++r) {
        if (o0 + r >= w.rows) {
            for (int64_t s = 0; s < len / kStep; ++s) put(a + r * kStep, s, _mm512_setzero_si512());
            continue;
        }
        const Block* row   = static_cast<const Block*>(w.row_ptr(o0 + r));
        const char*  ahead = reinterpret_cast<const char*>(row + b0 + nb);
        for (size_t l = 0; l < size_t(next) * sizeof(Block); l += 64) _mm_prefetch(ahead + l, _MM_HINT_T1);
        row_fn(row + b0, nb, a + r * kStep);
    }
}

void decode_rows(QuantMat w, int64_t o0, int64_t r0, int64_t r1, int64_t e0, int64_t len, uint16_t* a) {
    switch (w.type) {
        case QuantType::Q8_0:
            return decode_rows_of<BlockQ8_0, row_q8_0>(w, o0, r0, r1, e0, len, a);
        case QuantType::Q4_0:
            return decode_rows_of<BlockQ4_0, row_q4_0>(w, o0, r0, r1, e0, len, a);
        case QuantType::Q4_K:
            return decode_rows_of<BlockQ4_K, row_q4_k>(w, o0, r0, r1, e0, len, a);
        case QuantType::Q5_K:
            return decode_rows_of<BlockQ5_K, row_q5_k>(w, o0, r0, r1, e0, len, a);
        case QuantType::Q6_K:
            return decode_rows_of<BlockQ6_K, row_q6_k>(w, o0, r0, r1, e0, len, a);
    }
}

// One unit of a task's work: chunk e0 .. e0 + len of panel p (W rows 16 p ..).
struct Job {
    int64_t p = 0, e0 = 0, len = 0;
};

// Sums of one panel's chunk (cs A tiles at a) against G x tiles (tile j's steps at xg + j * xs words), added to the
// 16 x 16 fp32 sums at c (G of them, 256 floats each; zero for the first chunk). TDPBF16PS adds each step's 32 exact
// bf16 products into the sums; the sums pass through memory between chunks unchanged. after_step(s) runs after step
// s's products are issued: the next job's decoding, which the vector units do while the tile unit multiplies.
template <int G, class AfterStep>
void chunk_sums(const uint16_t* a, const uint32_t* xg, int64_t xs, int64_t cs, float* c, bool first,
                AfterStep&& after_step) {
    if (first) {
        _tile_zero(4);
        if constexpr (G > 1) _tile_zero(5);
        if constexpr (G > 2) _tile_zero(6);
    } else {
        _tile_loadd(4, c, 64);
        if constexpr (G > 1) _tile_loadd(5, c + 256, 64);
        if constexpr (G > 2) _tile_loadd(6, c + 512, 64);
    }
    for (int64_t s = 0; s < cs; ++s) {
        _tile_loadd(0, a + s * 2 * kWords, 64);
        _tile_loadd(1, xg + s * kWords, 64);
        if constexpr (G > 1) _tile_loadd(2, xg + xs + s * kWords, 64);
        if constexpr (G > 2) _tile_loadd(3, xg + 2 * xs + s * kWords, 64);
        _tile_dpbf16ps(4, 0, 1);
        if constexpr (G > 1) _tile_dpbf16ps(5, 0, 2);
        if constexpr (G > 2) _tile_dpbf16ps(6, 0, 3);
        after_step(s);
    }
    _tile_stored(4, c, 64);
    if constexpr (G > 1) _tile_stored(5, c + 256, 64);
    if constexpr (G > 2) _tile_stored(6, c + 512, 64);
}

// Panels p0 .. p1 (16 W rows each) against every x tile, into y's columns 16 p0 .. 16 p1. k is walked in chunks of
// kChunk outside the panels, so a chunk's x tiles (3 x 8 KiB for 33 rows) stay in L1 for all the panels, and the sums
// go to memory between chunks (panel-major order, each panel's sums kept in tiles over all of k, re-reads all of x
// from L2 for every panel). Each job's A tiles are decoded during the previous job's products (two buffers); decoding
// and then multiplying measured about 1.1x slower on the 33-row Q4_K product.
void panels(QuantMat w, const uint32_t* xp, int64_t x_tiles, int64_t p0, int64_t p1, MatF y) {
    static const TileConfig cfg = make_config();
    const int64_t           k = w.cols, steps = k / kStep, np = p1 - p0;
    float* const            sums     = aligned_scratch<3, float>(size_t(np * x_tiles * kTile * kTile));
    const size_t            a_len    = size_t(kChunk / kStep * 2 * kWords);
    uint16_t* const         a2       = aligned_scratch<1, uint16_t>(2 * a_len);
    auto                    next_job = [&](Job j) {
        if (++j.p < p1) return j;
        j.p = p0;
        j.e0 += j.len;
        j.len = std::min(kChunk, k - j.e0);
        return j;
    };
    Job job{p0, 0, std::min(kChunk, k)};
    _tile_loadconfig(&cfg);
    decode_rows(w, kTile * job.p, 0, kTile, job.e0, job.len, a2);
    for (int64_t n = 0; job.e0 < k; job = next_job(job), ++n) {
        const uint16_t* a  = a2 + size_t(n & 1) * a_len;
        uint16_t* const an = a2 + size_t((n + 1) & 1) * a_len;
        const Job       nj = next_job(job);
        const int64_t   cs = job.len / kStep;
        // The next job's rows decoded per step (no division for the usual full chunk).
        constexpr int64_t full = kChunk / kStep;
        const int64_t     per  = nj.e0 >= k ? 0 : cs == full ? (kTile + full - 1) / full : (kTile + cs - 1) / cs;
        int64_t           done = 0;
        auto              step = [&](int64_t) {
            const int64_t r1 = std::min(kTile, done + per);
            if (r1 > done) decode_rows(w, kTile * nj.p, done, r1, nj.e0, nj.len, an);
            done = r1;
        };
        auto none = [](int64_t) {};
        memory_barrier();
        for (int64_t t0 = 0; t0 < x_tiles; t0 += kGroup) {
            const int       g     = int(std::min<int64_t>(kGroup, x_tiles - t0));
            const uint32_t* xg    = xp + (t0 * steps + job.e0 / kStep) * kWords;
            float* const    c     = sums + ((job.p - p0) * x_tiles + t0) * kTile * kTile;
            const bool      first = job.e0 == 0;
            if (t0 == 0) {
                if (g == 3)
                    chunk_sums<3>(a, xg, steps * kWords, cs, c, first, step);
                else if (g == 2)
                    chunk_sums<2>(a, xg, steps * kWords, cs, c, first, step);
                else
                    chunk_sums<1>(a, xg, steps * kWords, cs, c, first, step);
            } else if (g == 3) {
                chunk_sums<3>(a, xg, steps * kWords, cs, c, first, none);
            } else if (g == 2) {
                chunk_sums<2>(a, xg, steps * kWords, cs, c, first, none);
            } else {
                chunk_sums<1>(a, xg, steps * kWords, cs, c, first, none);
            }
        }
        if (nj.e0 < k && done < kTile) decode_rows(w, kTile * nj.p, done, kTile, nj.e0, nj.len, an);
        memory_barrier();
    }
    _tile_release();
    for (int64_t p = p0; p < p1; ++p) {
        const int64_t o0 = kTile * p, rows = std::min(kTile, y.cols - o0);
        for (int64_t t = 0; t < x_tiles; ++t) {
            const float* c = sums + ((p - p0) * x_tiles + t) * kTile * kTile;
            for (int64_t j = 0; j < kTile && kTile * t + j < y.rows; ++j) {
                float* yr = y.row(kTile * t + j) + o0;
                for (int64_t r = 0; r < rows; ++r) yr[r] = c[r * kTile + j];
            }
        }
    }
}

}  // namespace amx
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#pragma GCC diagnostic pop

bool quant_amx_available() {
    static const bool ok = detect();
    return ok;
}

void quant_amx_matmul(CMatF x, QuantMat w, MatF y, ThreadPool& pool) {
    const int64_t n = y.rows, m = y.cols, k = w.cols;
    if (n == 0 || m == 0) return;
    if (k == 0) {
        for (int64_t i = 0; i < n; ++i) std::fill(y.row(i), y.row(i) + m, 0.0f);
        return;
    }
    const int64_t   steps = k / kStep, x_tiles = (n + kTile - 1) / kTile;
    uint32_t* const xp = aligned_scratch<2, uint32_t>(size_t(x_tiles * steps * kWords));
    pool.parallel_for(x_tiles, x_tiles * kTile * k,
                      [&](int64_t t, int) { amx::pack_x_tile(x, t, steps, xp + t * steps * kWords); });
    // Tasks of up to 16 consecutive panels (a chunk of x serves them all), at least 2 per thread. The split changes
    // no output's arithmetic.
    const int64_t n_panels = (m + kTile - 1) / kTile;
    const int64_t per_task = std::clamp<int64_t>(n_panels / (2 * int64_t(pool.size())), 1, 16);
    pool.parallel_for((n_panels + per_task - 1) / per_task, [&](int64_t t, int) {
        amx::panels(w, xp, x_tiles, t * per_task, std::min(n_panels, (t + 1) * per_task), y);
    });
}

#else

bool quant_amx_available() {
    return false;
}

void quant_amx_matmul(CMatF, QuantMat, MatF, ThreadPool&) {}

#endif

}  // namespace dyllm::cpu
