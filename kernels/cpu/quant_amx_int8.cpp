// The AMX-INT8 few-row quantized product (kernels/cpu/quant_amx_int8.h), Q4_K (Q8_0 the same way, below). Per panel of
// 16 W rows and Q4_K block (256 elements, 8 sub-blocks of 32 with their own 6-bit scale and min):
//   - the 16 rows' packed levels are transposed, 4 bytes at a time, into the B layout TDPBSUD reads (B row kk, bytes
//     4 c .. 4 c + 3: W row c's levels 4 kk .. 4 kk + 3 of the sub-block), low nibbles one sub-block, high the next;
//   - x's int8 values of the sub-block are the A tile as they lie in its quantized rows (no packing);
//   - C[i][c] = sum of x row i's 32 int8 values times W row c's levels, exact in int32, one tile per sub-block;
//   - the block's contribution d_x,i (sum_j d_c sc_cj C_j[i][c] - dmin_c m_cj bsum_ij) is added in fp32, 16 W rows a
//     vector, so the scale factors are per lane and the x factors broadcast.
// Instruction semantics: Intel Architecture Instruction Set Extensions Programming Reference (TDPBSUD, LDTILECFG).
#include "kernels/cpu/quant_amx_int8.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/quant_amx.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu/ref/quant.h"

#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__)
#include <immintrin.h>
#define DYLLM_QUANT_AMX_INT8 1
#endif

namespace dyllm::cpu {

#ifdef DYLLM_QUANT_AMX_INT8

namespace {

using amx_tiles::aligned_scratch;
using amx_tiles::memory_barrier;
using amx_tiles::TileConfig;

constexpr int kPanel = 16;  // W rows per panel: the 16 int32 columns of a C tile
constexpr int kSub   = 32;  // elements per Q4_K sub-block: one TDPBSUD's k
constexpr int kAhead = 4;   // blocks fetched ahead per W row

// tmm0-3: C (n rows of 16 int32), tmm4-5: A (n rows of 32 int8 of x), tmm6-7: B (8 rows of 16 W rows x 4 levels).
// Units of `unit` elements of k (32; Q6_K's 16-element sub-blocks 16).
TileConfig make_config(int n, int unit = kSub) {
    TileConfig cfg;
    for (int t = 0; t < 4; ++t) cfg.rows[t] = uint8_t(n), cfg.colsb[t] = 64;
    for (int t = 4; t < 6; ++t) cfg.rows[t] = uint8_t(n), cfg.colsb[t] = uint16_t(unit);
    for (int t = 6; t < 8; ++t) cfg.rows[t] = uint8_t(unit / 4), cfg.colsb[t] = 64;
    return cfg;
}

}  // namespace

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,bmi2,f16c,avx512f,avx512bw,avx512dq,avx512vl," \
                                                   "amx-tile,amx-int8"))),                                  \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4,amx-tile,amx-int8")
#endif
namespace amx8 {

// The 16 x 8 matrix of 32-bit words in[c][kk] (c: W row, in[c] = 8 words at rows[c]) as out[kk][c]: two 8 x 8
// transposes side by side in the two 256-bit halves (rows 0-7 low, 8-15 high).
inline void transpose_words(const uint8_t* const* rows, __m512i* out) {
    __m512i a[8], t[8], u[8];
    for (int p = 0; p < 8; ++p)
        a[p] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[p]))),
                                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[p + 8])), 1);
    for (int p = 0; p < 8; p += 2) {
        t[p]     = _mm512_unpacklo_epi32(a[p], a[p + 1]);  // words 0, 1 | 4, 5 of rows p, p + 1 interleaved
        t[p + 1] = _mm512_unpackhi_epi32(a[p], a[p + 1]);  // words 2, 3 | 6, 7
    }
    for (int q = 0; q < 2; ++q) {  // rows 4 q .. 4 q + 3
        const int b = 4 * q;
        u[b]        = _mm512_unpacklo_epi64(t[b], t[b + 2]);      // word 0 | 4 of the four rows
        u[b + 1]    = _mm512_unpackhi_epi64(t[b], t[b + 2]);      // word 1 | 5
        u[b + 2]    = _mm512_unpacklo_epi64(t[b + 1], t[b + 3]);  // word 2 | 6
        u[b + 3]    = _mm512_unpackhi_epi64(t[b + 1], t[b + 3]);  // word 3 | 7
    }
    // Each 128-bit lane of u holds four rows' word: join rows 0-3 (u[w]) with rows 4-7 (u[4 + w]) per half.
    const __m512i lo = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13), hi = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    for (int w = 0; w < 4; ++w) {
        out[w]     = _mm512_permutex2var_epi64(u[w], lo, u[4 + w]);
        out[w + 4] = _mm512_permutex2var_epi64(u[w], hi, u[4 + w]);
    }
}

// The 16 W rows of the panel at p (rows past o1 repeat the last one; their outputs are dropped) and their byte offsets
// from the first, the gathers' indices.
struct PanelRows {
    const uint8_t* wr[kPanel];
    __m512i        offs;
    int            rows;  // real rows: min(kPanel, o1 - p)
};

inline PanelRows panel_rows(QuantMat w, int64_t p, int64_t o1) {
    PanelRows pr;
    pr.rows = int(std::min<int64_t>(kPanel, o1 - p));
    int32_t off[kPanel];
    for (int c = 0; c < kPanel; ++c) {
        pr.wr[c] = static_cast<const uint8_t*>(w.row_ptr(p + std::min(c, pr.rows - 1)));
        off[c]   = int32_t(pr.wr[c] - pr.wr[0]);
    }
    pr.offs = _mm512_loadu_si512(off);
    return pr;
}

// W's rows are 16 interleaved streams the hardware prefetchers follow poorly (Q4_K 1.24x slower without this on a
// 12288 x 4096 product, 8 rows): `lines` cache lines of each row's unit `ahead` (units of unit_bytes, `units` per row),
// in the next panel's rows once `ahead` runs past the end of this one.
inline void prefetch_ahead(QuantMat w, const PanelRows& pr, int64_t p, int64_t o1, int64_t ahead, int64_t units,
                           int64_t unit_bytes, int lines) {
    if (ahead >= units && p + kPanel >= o1) return;
    for (int c = 0; c < kPanel; ++c) {
        const int64_t r = ahead < units ? p + std::min(c, pr.rows - 1) : std::min(p + kPanel + c, o1 - 1);
        const char*   a = static_cast<const char*>(w.row_ptr(r)) + (ahead < units ? ahead : ahead - units) * unit_bytes;
        for (int l = 0; l < lines; ++l) _mm_prefetch(a + 64 * l, _MM_HINT_T0);
    }
}

// x's per-block factors for the epilogue: xf[(i * nb + b) * 9]: d_x, then the 8 sub-blocks' sums of x's int8 values.
void x_factors(const uint8_t* xq, size_t xs, int64_t n, int64_t nb, float* xf) {
    for (int64_t i = 0; i < n; ++i)
        for (int64_t b = 0; b < nb; ++b) {
            const ActBlock256* xb = reinterpret_cast<const ActBlock256*>(xq + size_t(i) * xs) + b;
            float* const       f  = xf + (i * nb + b) * 9;
            f[0]                  = xb->d;
            for (int j = 0; j < 8; ++j) f[1 + j] = float(int(xb->bsums[2 * j]) + int(xb->bsums[2 * j + 1]));
        }
}

// Block b of a panel (rows wr[0..15]) into slot's buffers: its levels as 8 B tiles (bt) and d sc_j, dmin m_j per row
// (f: 8 vectors of 16 sc factors, then 8 of min factors), as dequantize_row computes them.
inline void decode_block(const uint8_t* const* wr, __m512i offs, int64_t b, uint8_t* bt, float* f) {
    const uint8_t* blk0 = wr[0] + b * int64_t(sizeof(BlockQ4_K));
    // d, dmin and the 12 scale bytes of the 16 rows, one 32-bit word per row per gather.
    const __m512i dd = _mm512_i32gather_epi32(offs, blk0, 1);
    const __m512i u0 = _mm512_i32gather_epi32(offs, blk0 + 4, 1);
    const __m512i u1 = _mm512_i32gather_epi32(offs, blk0 + 8, 1);
    const __m512i u2 = _mm512_i32gather_epi32(offs, blk0 + 12, 1);
    const __m512  d  = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dd));
    const __m512  dm = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16)));
    // quant_k_scale_min's 6-bit values, four sub-blocks per word (bytes 0-3).
    const __m512i m3f = _mm512_set1_epi32(0x3f3f3f3f), m0f = _mm512_set1_epi32(0x0f0f0f0f),
                  m03 = _mm512_set1_epi32(0x03030303), byte = _mm512_set1_epi32(0xff);
    const __m512i s_lo = _mm512_and_si512(u0, m3f), m_lo = _mm512_and_si512(u1, m3f);
    const __m512i s_hi   = _mm512_or_si512(_mm512_and_si512(u2, m0f),
                                           _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u0, 6), m03), 4));
    const __m512i m_hi   = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u2, 4), m0f),
                                           _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u1, 6), m03), 4));
    auto          factor = [&](__m512 scale, __m512i packed, int j) {
        return _mm512_mul_ps(scale, _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(packed, 8 * j), byte)));
    };
    for (int j = 0; j < 4; ++j) {
        _mm512_store_ps(f + 16 * j, factor(d, s_lo, j));
        _mm512_store_ps(f + 16 * (j + 4), factor(d, s_hi, j));
        _mm512_store_ps(f + 16 * (j + 8), factor(dm, m_lo, j));
        _mm512_store_ps(f + 16 * (j + 12), factor(dm, m_hi, j));
    }
    // The levels as B tiles: group g's 32 bytes hold sub-block 2 g (low nibbles) and 2 g + 1 (high).
    const __m512i low4 = _mm512_set1_epi8(15);
    for (int g = 0; g < 4; ++g) {
        const uint8_t* q[kPanel];
        for (int c = 0; c < kPanel; ++c) q[c] = wr[c] + b * int64_t(sizeof(BlockQ4_K)) + 16 + 32 * g;
        __m512i t[8];
        transpose_words(q, t);
        uint8_t* const lo = bt + (2 * g) * 512;
        uint8_t* const hi = lo + 512;
        for (int kk = 0; kk < 8; ++kk) {
            _mm512_store_si512(lo + 64 * kk, _mm512_and_si512(t[kk], low4));
            _mm512_store_si512(hi + 64 * kk, _mm512_and_si512(_mm512_srli_epi16(t[kk], 4), low4));
        }
    }
}

// The integer sums of up to 8 units of 32 elements (Q4_K: a block's sub-blocks; Q8_0: 8 blocks) or 16 (Q6_K's
// sub-blocks) into ct: unit j's x A tile at xa[j] (stride xs), W's B tile at bt + Bytes j (512 or 256), its n rows of
// 16 int32 to ct + j * n * 16. Four C tiles at a time, A and B loads alternating between two registers. Signed: W's
// levels are int8 (TDPBSSD), else uint8 (TDPBSUD).
// Unit J into C tile c through A tile a and B tile b (literal tile numbers: GCC's tile intrinsics paste them into
// the instruction).
#define DYLLM_UNIT_PRODUCT(J, a, b, c)        \
    do {                                      \
        _tile_loadd(a, xa[J], long(xs));      \
        _tile_loadd(b, bt + Bytes * (J), 64); \
        if constexpr (Signed)                 \
            _tile_dpbssd(c, a, b);            \
        else                                  \
            _tile_dpbsud(c, a, b);            \
    } while (0)

template <bool Signed, int Bytes = 512>
inline void unit_sums(const uint8_t* const* xa, size_t xs, const uint8_t* bt, int32_t* ct, int n, int units) {
    for (int h = 0; h < 2 && 4 * h < units; ++h) {
        const int u = units - 4 * h;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        if (h == 0) {
            DYLLM_UNIT_PRODUCT(0, 4, 6, 0);
            if (u > 1) DYLLM_UNIT_PRODUCT(1, 5, 7, 1);
            if (u > 2) DYLLM_UNIT_PRODUCT(2, 4, 6, 2);
            if (u > 3) DYLLM_UNIT_PRODUCT(3, 5, 7, 3);
        } else {
            DYLLM_UNIT_PRODUCT(4, 4, 6, 0);
            if (u > 1) DYLLM_UNIT_PRODUCT(5, 5, 7, 1);
            if (u > 2) DYLLM_UNIT_PRODUCT(6, 4, 6, 2);
            if (u > 3) DYLLM_UNIT_PRODUCT(7, 5, 7, 3);
        }
        int32_t* const c = ct + (4 * h) * n * 16;
        _tile_stored(0, c, 64);
        if (u > 1) _tile_stored(1, c + n * 16, 64);
        if (u > 2) _tile_stored(2, c + 2 * n * 16, 64);
        if (u > 3) _tile_stored(3, c + 3 * n * 16, 64);
    }
}
#undef DYLLM_UNIT_PRODUCT

// acc[i] += d_x,i (sum_j sc_j C_j[i] - sum_j mn_j bsum_ij) for block b, 16 W rows a vector.
inline void block_epilogue(const int32_t* ct, const float* f, const float* xf, int64_t nb, int64_t b, int n,
                           float* acc) {
    for (int i = 0; i < n; ++i) {
        const float* x = xf + (i * nb + b) * 9;
        __m512       s = _mm512_mul_ps(_mm512_load_ps(f), _mm512_cvtepi32_ps(_mm512_load_si512(ct + i * 16)));
        for (int j = 1; j < 8; ++j)
            s = _mm512_fmadd_ps(_mm512_load_ps(f + 16 * j),
                                _mm512_cvtepi32_ps(_mm512_load_si512(ct + (j * n + i) * 16)), s);
        for (int j = 0; j < 8; ++j) s = _mm512_fnmadd_ps(_mm512_load_ps(f + 16 * (8 + j)), _mm512_set1_ps(x[1 + j]), s);
        float* const a = acc + i * 16;
        _mm512_store_ps(a, _mm512_fmadd_ps(_mm512_set1_ps(x[0]), s, _mm512_load_ps(a)));
    }
}

void rows_q4_k(const uint8_t* xq, size_t xs, int n, QuantMat w, int64_t o0, int64_t o1, MatF y) {
    const int64_t nb = w.cols / kQuantBlockK;
    float* const  xf = aligned_scratch<10, float>(size_t(n * nb * 9));
    x_factors(xq, xs, n, nb, xf);
    // Two slots of each per-block buffer: block b's tiles run while block b - 1's sums are scaled and block b + 1 is
    // decoded, so no load waits on the store just before it (AMX stores and vector loads do not forward).
    uint8_t* const   bt  = aligned_scratch<11, uint8_t>(2 * 8 * 512);             // 8 B tiles per block
    int32_t* const   ct  = aligned_scratch<12, int32_t>(size_t(2 * 8 * n * 16));  // 8 C tiles per block
    float* const     fs  = aligned_scratch<13, float>(2 * 16 * 16);               // sc and min factors per block
    float* const     acc = aligned_scratch<14, float>(size_t(n * 16));
    const TileConfig cfg = make_config(n);
    _tile_loadconfig(&cfg);
    const size_t         ct_slot = size_t(8 * n * 16);
    const uint8_t* const xa0     = xq + offsetof(ActBlock256, qs);
    for (int64_t p = o0; p < o1; p += kPanel) {
        const PanelRows       pr   = panel_rows(w, p, o1);
        const int             rows = pr.rows;
        const uint8_t* const* wr   = pr.wr;
        const __m512i         offs = pr.offs;
        std::fill(acc, acc + n * 16, 0.0f);
        decode_block(wr, offs, 0, bt, fs);
        for (int64_t b = 0; b < nb; ++b) {
            const int64_t s = b & 1, t = s ^ 1;
            memory_barrier();  // the tile loads read bt, the tile stores write ct
            const uint8_t* xa[8];
            for (int u = 0; u < 8; ++u) xa[u] = xa0 + b * int64_t(sizeof(ActBlock256)) + kSub * u;
            unit_sums<false>(xa, xs, bt + s * 4096, ct + s * ct_slot, n, 8);
            if (b > 0) block_epilogue(ct + t * ct_slot, fs + t * 256, xf, nb, b - 1, n, acc);
            if (b + 1 < nb) decode_block(wr, offs, b + 1, bt + t * 4096, fs + t * 256);
            prefetch_ahead(w, pr, p, o1, b + kAhead, nb, int64_t(sizeof(BlockQ4_K)), 3);
            memory_barrier();
        }
        block_epilogue(ct + ((nb - 1) & 1) * ct_slot, fs + ((nb - 1) & 1) * 256, xf, nb, nb - 1, n, acc);
        for (int i = 0; i < n; ++i) std::memcpy(y.row(i) + (p - o0), acc + i * 16, size_t(rows) * sizeof(float));
    }
    _tile_release();
}

// Q8_0 in units of 8 blocks (256 elements; the last unit may hold fewer): unit u's blocks b0 .. b0 + units as B tiles
// (the int8 levels transposed, no unpacking) and their scales per row (f: one vector of 16 per block).
inline void decode_unit_q8_0(const uint8_t* const* wr, __m512i offs, int64_t b0, int units, uint8_t* bt, float* f) {
    for (int j = 0; j < units; ++j) {
        const int64_t at = (b0 + j) * int64_t(sizeof(BlockQ8_0));
        // d and the first two levels of each row's block: the scale is the low half of each word.
        const __m512i dd = _mm512_i32gather_epi32(offs, wr[0] + at, 1);
        _mm512_store_ps(f + 16 * j, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dd)));
        const uint8_t* q[kPanel];
        for (int c = 0; c < kPanel; ++c) q[c] = wr[c] + at + offsetof(BlockQ8_0, qs);
        __m512i t[8];
        transpose_words(q, t);
        for (int kk = 0; kk < 8; ++kk) _mm512_store_si512(bt + 512 * j + 64 * kk, t[kk]);
    }
}

// acc[i] += sum_j d_x,ij (d_j C_j[i]) over the unit's blocks.
inline void unit_epilogue_q8_0(const int32_t* ct, const float* f, const uint8_t* xq, size_t xs, int64_t b0, int units,
                               int n, float* acc) {
    for (int i = 0; i < n; ++i) {
        const ActBlock32* xb = reinterpret_cast<const ActBlock32*>(xq + size_t(i) * xs) + b0;
        float* const      a  = acc + i * 16;
        __m512            v  = _mm512_load_ps(a);
        for (int j = 0; j < units; ++j)
            v = _mm512_fmadd_ps(
                _mm512_set1_ps(xb[j].d),
                _mm512_mul_ps(_mm512_load_ps(f + 16 * j), _mm512_cvtepi32_ps(_mm512_load_si512(ct + (j * n + i) * 16))),
                v);
        _mm512_store_ps(a, v);
    }
}

void rows_q8_0(const uint8_t* xq, size_t xs, int n, QuantMat w, int64_t o0, int64_t o1, MatF y) {
    const int64_t    nb = w.cols / kQuantBlock32, nu = (nb + 7) / 8;
    uint8_t* const   bt  = aligned_scratch<11, uint8_t>(2 * 8 * 512);
    int32_t* const   ct  = aligned_scratch<12, int32_t>(size_t(2 * 8 * n * 16));
    float* const     fs  = aligned_scratch<13, float>(2 * 8 * 16);
    float* const     acc = aligned_scratch<14, float>(size_t(n * 16));
    const TileConfig cfg = make_config(n);
    _tile_loadconfig(&cfg);
    const size_t ct_slot = size_t(8 * n * 16);
    auto         units   = [&](int64_t u) { return int(std::min<int64_t>(8, nb - 8 * u)); };
    for (int64_t p = o0; p < o1; p += kPanel) {
        const PanelRows       pr   = panel_rows(w, p, o1);
        const int             rows = pr.rows;
        const uint8_t* const* wr   = pr.wr;
        const __m512i         offs = pr.offs;
        std::fill(acc, acc + n * 16, 0.0f);
        decode_unit_q8_0(wr, offs, 0, units(0), bt, fs);
        for (int64_t u = 0; u < nu; ++u) {
            const int64_t s = u & 1, t = s ^ 1;
            memory_barrier();
            const uint8_t* xa[8];
            for (int j = 0; j < 8; ++j)
                xa[j] = xq + (8 * u + j) * int64_t(sizeof(ActBlock32)) + offsetof(ActBlock32, qs);
            unit_sums<true>(xa, xs, bt + s * 4096, ct + s * ct_slot, n, units(u));
            if (u > 0) unit_epilogue_q8_0(ct + t * ct_slot, fs + t * 128, xq, xs, 8 * (u - 1), units(u - 1), n, acc);
            if (u + 1 < nu) decode_unit_q8_0(wr, offs, 8 * (u + 1), units(u + 1), bt + t * 4096, fs + t * 128);
            prefetch_ahead(w, pr, p, o1, u + 2, nu, 8 * int64_t(sizeof(BlockQ8_0)), 5);  // units of 8 blocks
            memory_barrier();
        }
        const int64_t last = nu - 1;
        unit_epilogue_q8_0(ct + (last & 1) * ct_slot, fs + (last & 1) * 128, xq, xs, 8 * last, units(last), n, acc);
        for (int i = 0; i < n; ++i) std::memcpy(y.row(i) + (p - o0), acc + i * 16, size_t(rows) * sizeof(float));
    }
    _tile_release();
}

// Q6_K, block b of a panel: its 16 sub-blocks of 16 levels (0-63) as B tiles of 4 rows (bt + 256 j) and d scales_j
// per row (f: 16 vectors of 16), as dequantize_row computes them. Quarter p of half h (elements 128 h + 32 p ..): low
// bits from ql[64 h + 32 (p & 1)] nibble p >> 1, high bits from qh[32 h] >> 2 p; words 0-3 of the quarter are
// sub-block 8 h + 2 p, words 4-7 the next.
inline void decode_block_q6_k(const uint8_t* const* wr, __m512i offs, int64_t b, uint8_t* bt, float* f) {
    const int64_t  at   = b * int64_t(sizeof(BlockQ6_K));
    const uint8_t* blk0 = wr[0] + at;
    // The 16 int8 scales of each row, four per word, and d (the high half of the word at 206: scales 14-15 and d,
    // inside the block).
    const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(
        _mm512_srli_epi32(_mm512_i32gather_epi32(offs, blk0 + offsetof(BlockQ6_K, d) - 2, 1), 16)));
    for (int w = 0; w < 4; ++w) {
        const __m512i u = _mm512_i32gather_epi32(offs, blk0 + offsetof(BlockQ6_K, scales) + 4 * w, 1);
        for (int e = 0; e < 4; ++e) {
            const __m512i sc = _mm512_srai_epi32(_mm512_slli_epi32(u, 24 - 8 * e), 24);  // sign-extended byte e
            _mm512_store_ps(f + 16 * (4 * w + e), _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc)));
        }
    }
    const __m512i m4 = _mm512_set1_epi8(15), m2 = _mm512_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
        const uint8_t* q[kPanel];
        __m512i        la[8], lb[8], hb[8];
        for (int c = 0; c < kPanel; ++c) q[c] = wr[c] + at + offsetof(BlockQ6_K, ql) + 64 * h;
        transpose_words(q, la);
        for (int c = 0; c < kPanel; ++c) q[c] += 32;
        transpose_words(q, lb);
        for (int c = 0; c < kPanel; ++c) q[c] = wr[c] + at + offsetof(BlockQ6_K, qh) + 32 * h;
        transpose_words(q, hb);
        for (int kk = 0; kk < 8; ++kk) {
            const __m512i lv[4] = {_mm512_and_si512(la[kk], m4), _mm512_and_si512(lb[kk], m4),
                                   _mm512_and_si512(_mm512_srli_epi16(la[kk], 4), m4),
                                   _mm512_and_si512(_mm512_srli_epi16(lb[kk], 4), m4)};
            for (int p = 0; p < 4; ++p) {
                const __m512i hi =
                    _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb[kk], 2 * p), m2), 4);  // bits 4-5
                const int j = 8 * h + 2 * p + (kk >> 2);
                _mm512_store_si512(bt + 256 * j + 64 * (kk & 3), _mm512_or_si512(lv[p], hi));
            }
        }
    }
}

// acc[i] += d_x,i sum_j f_j (C_j[i] - 32 bsum_ij) for Q6_K block b (xb: 32 bsum per x row, block and sub-block).
inline void block_epilogue_q6_k(const int32_t* ct, const float* f, const int32_t* xb, const float* xd, int64_t nb,
                                int64_t b, int n, float* acc) {
    for (int i = 0; i < n; ++i) {
        const int32_t* o = xb + (i * nb + b) * 16;
        __m512         s = _mm512_setzero_ps();
        for (int j = 0; j < 16; ++j) {
            const __m512i c = _mm512_sub_epi32(_mm512_load_si512(ct + (j * n + i) * 16), _mm512_set1_epi32(o[j]));
            s               = _mm512_fmadd_ps(_mm512_load_ps(f + 16 * j), _mm512_cvtepi32_ps(c), s);
        }
        float* const a = acc + i * 16;
        _mm512_store_ps(a, _mm512_fmadd_ps(_mm512_set1_ps(xd[i * nb + b]), s, _mm512_load_ps(a)));
    }
}

void rows_q6_k(const uint8_t* xq, size_t xs, int n, QuantMat w, int64_t o0, int64_t o1, MatF y) {
    const int64_t nb = w.cols / kQuantBlockK;
    // x's factors: d_x per block, 32 times each 16-element sum (the levels' offset of 32, taken out of the integer
    // sums).
    float* const   xd = aligned_scratch<10, float>(size_t(n * nb));
    int32_t* const xb = aligned_scratch<15, int32_t>(size_t(n * nb * 16));
    for (int64_t i = 0; i < n; ++i)
        for (int64_t b = 0; b < nb; ++b) {
            const ActBlock256* a = reinterpret_cast<const ActBlock256*>(xq + size_t(i) * xs) + b;
            xd[i * nb + b]       = a->d;
            for (int j = 0; j < 16; ++j) xb[(i * nb + b) * 16 + j] = 32 * int32_t(a->bsums[j]);
        }
    uint8_t* const   bt  = aligned_scratch<11, uint8_t>(2 * 16 * 256);
    int32_t* const   ct  = aligned_scratch<12, int32_t>(size_t(2 * 16 * n * 16));
    float* const     fs  = aligned_scratch<13, float>(2 * 16 * 16);
    float* const     acc = aligned_scratch<14, float>(size_t(n * 16));
    const TileConfig cfg = make_config(n, 16);
    _tile_loadconfig(&cfg);
    const size_t ct_slot = size_t(16 * n * 16);
    for (int64_t p = o0; p < o1; p += kPanel) {
        const PanelRows       pr   = panel_rows(w, p, o1);
        const int             rows = pr.rows;
        const uint8_t* const* wr   = pr.wr;
        const __m512i         offs = pr.offs;
        std::fill(acc, acc + n * 16, 0.0f);
        decode_block_q6_k(wr, offs, 0, bt, fs);
        for (int64_t b = 0; b < nb; ++b) {
            const int64_t s = b & 1, t = s ^ 1;
            memory_barrier();
            const uint8_t* xa[16];
            for (int j = 0; j < 16; ++j)
                xa[j] = xq + b * int64_t(sizeof(ActBlock256)) + offsetof(ActBlock256, qs) + 16 * j;
            unit_sums<false, 256>(xa, xs, bt + s * 4096, ct + s * ct_slot, n, 8);
            unit_sums<false, 256>(xa + 8, xs, bt + s * 4096 + 8 * 256, ct + s * ct_slot + 8 * n * 16, n, 8);
            if (b > 0) block_epilogue_q6_k(ct + t * ct_slot, fs + t * 256, xb, xd, nb, b - 1, n, acc);
            if (b + 1 < nb) decode_block_q6_k(wr, offs, b + 1, bt + t * 4096, fs + t * 256);
            prefetch_ahead(w, pr, p, o1, b + kAhead, nb, int64_t(sizeof(BlockQ6_K)), 4);
            memory_barrier();
        }
        block_epilogue_q6_k(ct + ((nb - 1) & 1) * ct_slot, fs + ((nb - 1) & 1) * 256, xb, xd, nb, nb - 1, n, acc);
        for (int i = 0; i < n; ++i) std::memcpy(y.row(i) + (p - o0), acc + i * 16, size_t(rows) * sizeof(float));
    }
    _tile_release();
}

}  // namespace amx8
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#pragma GCC diagnostic pop

bool quant_amx_int8_available() {
    // CPUID leaf 7 EDX bit 25: AMX-INT8 (the tile state itself is granted by quant_amx_available()).
    static const bool ok = quant_amx_available() && cpuid_bit(7, 0, 3, 25);
    return ok;
}

bool quant_amx_int8_supported(QuantType t) {
    return t == QuantType::Q4_K || t == QuantType::Q8_0 || t == QuantType::Q6_K;
}

void quant_amx_int8_rows(const void* xq, size_t xs, int64_t n, QuantMat w, int64_t o0, int64_t o1, MatF y) {
    if (n <= 0 || o1 <= o0) return;
    if (w.type == QuantType::Q8_0)
        amx8::rows_q8_0(static_cast<const uint8_t*>(xq), xs, int(n), w, o0, o1, y);
    else if (w.type == QuantType::Q4_K)
        amx8::rows_q4_k(static_cast<const uint8_t*>(xq), xs, int(n), w, o0, o1, y);
    else if (w.type == QuantType::Q6_K)
        amx8::rows_q6_k(static_cast<const uint8_t*>(xq), xs, int(n), w, o0, o1, y);
}

#else

bool quant_amx_int8_available() {
    return false;
}
bool quant_amx_int8_supported(QuantType) {
    return false;
}
void quant_amx_int8_rows(const void*, size_t, int64_t, QuantMat, int64_t, int64_t, MatF) {}

#endif

}  // namespace dyllm::cpu
