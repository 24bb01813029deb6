// The few-row product against a k-major copy of a small weight (kernels/cpu/small_gemm.h).
#include "kernels/cpu/small_gemm.h"

#include <algorithm>
#include <cstring>

#include "kernels/common/dtype_convert.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/simd.h"

// 16-lane values only pass between always-inlined helpers here (see simd.h).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace dyllm::cpu {

KMajorWeight make_kmajor(ConstMat w) {
    KMajorWeight out;
    out.m            = w.rows;
    out.k            = w.cols;
    out.panel        = 16;
    out.panel_stride = 16 * w.cols;
    out.type         = w.type;
    out.own.assign(size_t((w.rows + 15) / 16 * out.panel_stride), 0.0f);
    std::vector<float> row(size_t(w.cols));
    for (int64_t o = 0; o < w.rows; ++o) {
        widen_row(w.row_ptr(o), w.type, row.data(), w.cols);
        float* col = out.own.data() + (out.column(o) - out.base());
        for (int64_t c = 0; c < w.cols; ++c) col[c * out.panel] = row[size_t(c)];
    }
    return out;
}

KMajorWeight kmajor_view(const float* base, int64_t m, int64_t k, int64_t panel, int64_t panel_stride) {
    return KMajorWeight{
        .own = {}, .view = base, .m = m, .k = k, .panel = panel, .panel_stride = panel_stride, .type = ElemType::F32};
}

int64_t kmajor_slice_align(const KMajorWeight& w) {
    return w.panel;
}

KMajorWeight kmajor_slice(const KMajorWeight& w, int64_t o0, int64_t o1) {
    // Whole panels (o0 is a multiple of the panel width, which stays the row stride).
    KMajorWeight out = kmajor_view(w.column(o0), o1 - o0, w.k, w.panel, w.panel_stride);
    out.type         = w.type;
    return out;
}

namespace {

// R rows of x against NV vectors of L outputs starting at o0; vector v's weights start at wp[v] (row stride ld, so
// a tile may span panels): R x NV accumulators over all k in registers, each weight vector loaded once per c and used
// by every row. Each output is one chain of fused multiply-adds over c in order, whatever R, NV and L.
// pf (optional): the first n_pf lines pf[c * ld] to prefetch, one per c, for the tile that reads them next.
template <int L, int R, int NV>
DYLLM_ALWAYS_INLINE void tile(const float* const* xr, const float* const* wp, int64_t ld, int64_t k, int64_t o0,
                              const float* bias, int64_t m, float* const* yr, const float* pf = nullptr,
                              int64_t n_pf = 0) {
    using V      = typename simd::Lanes<L>::F;
    V acc[R][NV] = {};
    for (int64_t c = 0; c < k; ++c) {
        if (c < n_pf) __builtin_prefetch(pf + c * ld);
        V wv[NV];
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) wv[v] = simd::load<L>(wp[v] + c * ld);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const float xv = xr[r][c];
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) acc[r][v] += xv * wv[v];
        }
    }
    const int64_t n_out = std::min<int64_t>(L * NV, m - o0);
    // A whole tile goes straight from the registers: the buffer and a memcpy call per row cost a k = 128 tile (768
    // cycles of FMAs) several percent (small_gemm on tiny-llada's q/k/v weights, 336 rows, AVX2 EPYC: best of four
    // alternating runs 82.9 -> 87.2 GFLOP/s, with the block's row pointers found once, below).
    if (n_out == L * NV) {
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v)
                simd::store<L>(yr[r] + o0 + L * v, bias ? acc[r][v] + simd::load<L>(bias + o0 + L * v) : acc[r][v]);
        return;
    }
    for (int r = 0; r < R; ++r) {
        float buf[L * NV];
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) simd::store<L>(buf + L * v, acc[r][v]);
        float* y = yr[r] + o0;
        if (bias)
            for (int64_t o = 0; o < n_out; ++o) y[o] = buf[o] + bias[o0 + o];
        else
            std::memcpy(y, buf, size_t(n_out) * sizeof(float));
    }
}

// Outputs [o0, o1) (o0 a multiple of L) in tiles of NV vectors of L outputs.
template <int L, int R, int NV>
DYLLM_ALWAYS_INLINE int64_t tiles(const float* const* xr, const KMajorWeight& w, const float* bias, float* const* yr,
                                  int64_t o0, int64_t o1) {
    for (; o0 + L * (NV - 1) < o1; o0 += L * NV) {  // the last vector may run into the panel's padding
        const float* wp[NV];
        for (int v = 0; v < NV; ++v) wp[v] = w.column(o0 + L * v);
        tile<L, R, NV>(xr, wp, w.panel, w.k, o0, bias, w.m, yr);
    }
    return o0;
}

// About 8-12 independent accumulators keep the FMA units busy (4 cycles each, two issued per cycle) while the tile
// still fits the register file: few rows take more output vectors per tile. Vectors of L = 16 lanes (one zmm) on
// AVX-512; of 8 (one ymm) elsewhere: 16-lane values on AVX2 are register pairs, and an 8-row tile of them (32 ymm)
// spilled: the product ran at 1.6 GFLOP/s on an AVX2 EPYC, against 76 for oneDNN's sgemm. On a weight in L2 (Emerald
// Rapids, 1 thread) 1-4 rows ran 15-45% faster than with 2-vector tiles (1 x 128 x 344: 3.7 -> 2.5 us; 4 x 688 x
// 128: 9.7 -> 7.2 us). Vectors of L outputs never straddle a panel (panels are whole multiples of 16).
// Without AVX-512, more than 6 rows: tiles of up to 6 rows x 2 vectors of 8 outputs (12 accumulators, 2 weight vectors
// and a broadcast in 16 ymm registers; the 16 outputs' weights are one cache line per c), in blocks of 48 rows
// (narrow_rows). An AVX2 EPYC, 1 thread, tiny-llada and hidden-256 weights at 33-336 rows (bench_gemm_providers):
// 8-row x 1-vector tiles 30-42 GFLOP/s; 4 x 3 or 6 x 2 tiles in row blocks 45-80, OpenBLAS 50-90 (that host's noise
// is +-30% from run to run; no tiling of these was steadily ahead).
constexpr int     kNarrowTileRows  = 6;
constexpr int64_t kNarrowBlockRows = 48;

template <int L, int R>
constexpr int kTileVectors = L == 16 ? (R == 1   ? 8
                                        : R <= 4 ? 4
                                                 : 2)
                                     : (R == 1   ? 8
                                        : R == 2 ? 6
                                        : R == 3 ? 4
                                        : R == 4 ? 3
                                        : R <= 6 ? 2
                                                 : 1);

template <int L, int R>
DYLLM_ALWAYS_INLINE void rows(const float* const* xr, const KMajorWeight& w, const float* bias, float* const* yr,
                              int64_t o0 = 0) {
    constexpr int NV = kTileVectors<L, R>;
    o0               = tiles<L, R, NV>(xr, w, bias, yr, o0, w.m);
    if constexpr (NV > 4) o0 = tiles<L, R, 4>(xr, w, bias, yr, o0, w.m);
    if constexpr (NV > 2) o0 = tiles<L, R, 2>(xr, w, bias, yr, o0, w.m);
    if constexpr (NV > 1) o0 = tiles<L, R, 1>(xr, w, bias, yr, o0, w.m);
}

template <int L>
DYLLM_ALWAYS_INLINE void row_tile(int nr, const float* const* xr, const KMajorWeight& w, const float* bias,
                                  float* const* yr, int64_t o0 = 0) {
    switch (nr) {
        case 1:
            rows<L, 1>(xr, w, bias, yr, o0);
            break;
        case 2:
            rows<L, 2>(xr, w, bias, yr, o0);
            break;
        case 3:
            rows<L, 3>(xr, w, bias, yr, o0);
            break;
        case 4:
            rows<L, 4>(xr, w, bias, yr, o0);
            break;
        case 5:
            rows<L, 5>(xr, w, bias, yr, o0);
            break;
        case 6:
            rows<L, 6>(xr, w, bias, yr, o0);
            break;
        case 7:
            rows<L, 7>(xr, w, bias, yr, o0);
            break;
        default:
            rows<L, 8>(xr, w, bias, yr, o0);
            break;
    }
}

// Rows of x as the products read them and rows of y, for the rows [r0, r0 + nr).
struct RowPointers {
    CMatF        x;
    const float* rounded;  // x rounded to bf16 (BF16 weights), else nullptr
    MatF         y;
    void         get(int64_t r0, int nr, const float** xr, float** yr) const {
                for (int r = 0; r < nr; ++r) {
                    xr[r] = rounded ? rounded + (r0 + r) * x.cols : x.row(r0 + r);
                    yr[r] = y.row(r0 + r);
        }
    }
};

// R rows x the strip of 2 x 8 outputs from o0 (R <= 6: at most 12 accumulators), prefetching n_pf lines from pf.
DYLLM_ALWAYS_INLINE void strip_tile(int nr, const float* const* xr, const float* const* wp, const KMajorWeight& w,
                                    int64_t o0, const float* bias, float* const* yr, const float* pf, int64_t n_pf) {
    switch (nr) {
        case 1:
            tile<8, 1, 2>(xr, wp, w.panel, w.k, o0, bias, w.m, yr, pf, n_pf);
            break;
        case 2:
            tile<8, 2, 2>(xr, wp, w.panel, w.k, o0, bias, w.m, yr, pf, n_pf);
            break;
        case 3:
            tile<8, 3, 2>(xr, wp, w.panel, w.k, o0, bias, w.m, yr, pf, n_pf);
            break;
        case 4:
            tile<8, 4, 2>(xr, wp, w.panel, w.k, o0, bias, w.m, yr, pf, n_pf);
            break;
        case 5:
            tile<8, 5, 2>(xr, wp, w.panel, w.k, o0, bias, w.m, yr, pf, n_pf);
            break;
        default:
            tile<8, 6, 2>(xr, wp, w.panel, w.k, o0, bias, w.m, yr, pf, n_pf);
            break;
    }
}

// Without AVX-512 (16 ymm registers), more than kNarrowTileRows rows: the rows split as evenly as possible into
// tiles of at most 6 (32 rows: 6, 6, 5, 5, 5, 5; no 2-row leftover tile starving the FMA units), tiles grouped in
// blocks of kNarrowBlockRows rows, and within a block strip by strip: a strip's weights (k x 64 bytes) stay in L1
// while every tile of the block passes over them, instead of the whole weight coming from L2 once per tile. The
// outputs past the last whole strip take whole-weight tiles. Every output is still one chain over c in order.
DYLLM_ALWAYS_INLINE void narrow_rows(const RowPointers& rp, int64_t n, const KMajorWeight& w, const float* bias) {
    constexpr int L = 8, NV = 2, RT = kNarrowTileRows;
    const int64_t n_tiles = (n + RT - 1) / RT, full_out = w.m / (L * NV) * (L * NV);
    constexpr int PB = kNarrowBlockRows / RT;  // tiles per block
    const float*  xr[PB][RT];  // the block's tiles' rows, found once per block (not once per tile and strip)
    float*        yr[PB][RT];
    int           nr[PB];
    for (int64_t t0 = 0; t0 < n_tiles; t0 += PB) {
        const int64_t t1 = std::min<int64_t>(n_tiles, t0 + PB);
        for (int64_t t = t0; t < t1; ++t) {  // tile t: rows [n t / n_tiles, n (t + 1) / n_tiles)
            const int64_t r0 = n * t / n_tiles;
            nr[t - t0]       = int(n * (t + 1) / n_tiles - r0);
            rp.get(r0, nr[t - t0], xr[t - t0], yr[t - t0]);
        }
        for (int64_t o0 = 0; o0 < full_out; o0 += L * NV) {
            const float* wp[NV] = {w.column(o0), w.column(o0 + L)};
            // The next strip (k lines) comes in while this one's tiles run, a share of its lines per tile: on its own
            // the first tile of a strip waits for every line from L3 (the weights of a step do not fit L2).
            const float*  next  = o0 + L * NV < full_out ? w.column(o0 + L * NV) : nullptr;
            const int64_t share = (w.k + (t1 - t0) - 1) / (t1 - t0);
            for (int64_t t = t0; t < t1; ++t) {
                const int64_t c0 = std::min(w.k, (t - t0) * share);
                strip_tile(nr[t - t0], xr[t - t0], wp, w, o0, bias, yr[t - t0], next ? next + c0 * w.panel : nullptr,
                           next ? std::min(share, w.k - c0) : 0);
            }
        }
        if (full_out < w.m)
            for (int64_t t = t0; t < t1; ++t) row_tile<L>(nr[t - t0], xr[t - t0], w, bias, yr[t - t0], full_out);
    }
}

}  // namespace

DYLLM_CPU_CLONES void small_gemm(CMatF x, const KMajorWeight& w, const float* bias, MatF y) {
    const int64_t n = x.rows;
    if (n == 0 || w.m == 0) return;
    // Rows of x as the products read them: as stored for an F32 weight, rounded to bf16 for a BF16 one (the
    // buffer only grows: a steady run does not allocate here).
    thread_local std::vector<float> rounded;
    if (w.type == ElemType::BF16) {
        if (rounded.size() < size_t(n * w.k)) rounded.resize(size_t(n * w.k));
        for (int64_t r = 0; r < n; ++r)
            for (int64_t c = 0; c < w.k; ++c) rounded[size_t(r * w.k + c)] = round_to_bf16(x.row(r)[c]);
    }
    const RowPointers rp{x, w.type == ElemType::BF16 ? rounded.data() : nullptr, y};
    const float*      xr[8];
    float*            yr[8];
    if (!simd::wide_registers()) {  // 16-lane vectors are register pairs (kTileVectors)
        if (n > kNarrowTileRows) return narrow_rows(rp, n, w, bias);
        rp.get(0, int(n), xr, yr);
        return row_tile<8>(int(n), xr, w, bias, yr);
    }
    // Tiles of 8 rows, then the remainder; each tile reads the whole (cache-resident) weight once.
    for (int64_t r0 = 0; r0 < n; r0 += 8) {
        const int nr = int(std::min<int64_t>(8, n - r0));
        rp.get(r0, nr, xr, yr);
        row_tile<16>(nr, xr, w, bias, yr);
    }
}

}  // namespace dyllm::cpu
