// Index bookkeeping of DyLLM's column-sparse approximate attention (kernels/README.md §b.1 steps 1-3), shared by the
// CUDA kernel and CPU tests: keys are cut into 64-key tiles per sequence; each tile carries a 64-bit mask of its
// salient keys and the dv row of its first salient key, so the kernel finds the dv row of salient key r as base +
// popcount(mask below r). Also the query-tile plan of the tiled attention kernels (runs of query rows of one sequence).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common/hd.h"

namespace dyllm {

// Keys per mask word: one uint64 bit per key (the newer DyLLM kernels' 64-key words, kernels/README.md §b.1 step 1).
constexpr int kKeyTile = 64;

DYLLM_HD int popcount64(uint64_t x) {
#if defined(__CUDA_ARCH__)
    return __popcll(x);
#else
    return __builtin_popcountll(x);
#endif
}

// Rank of bit r among the set bits of mask (the number of set bits below r).
DYLLM_HD int mask_rank(uint64_t mask, int r) {
    return r == 0 ? 0 : popcount64(mask & (~0ull >> (64 - r)));
}

// Per-tile salient masks of all sequences. Tiles of sequence b are [tile_off[b], tile_off[b + 1]); tile t of b covers
// packed key rows cu_k[b] + 64 t ... + 63; base[tile] is the dv row (index into sal_k) of the tile's first salient key.
struct KeyTileMasks {
    std::vector<int32_t>  tile_off;  // [B + 1]
    std::vector<uint64_t> mask;      // [n_tiles]
    std::vector<int32_t>  base;      // [n_tiles]
};

// Builds the masks from the packed salient key rows sal_k (ascending within each sequence, inside its key range),
// cu_sal: [B + 1] offsets into sal_k, cu_k: [B + 1] key offsets. Throws std::invalid_argument naming the first
// violated condition (the kernel's rank lookup is only right for sorted, in-range, duplicate-free lists;
// kernels/README.md §f.9).
inline KeyTileMasks build_key_tile_masks(const int32_t* sal_k, const int32_t* cu_sal, const int32_t* cu_k, int n_seq) {
    KeyTileMasks m;
    m.tile_off.assign(size_t(n_seq) + 1, 0);
    for (int b = 0; b < n_seq; ++b) {
        const int32_t len = cu_k[b + 1] - cu_k[b];
        if (len < 0) throw std::invalid_argument("cu_k is not non-decreasing at sequence " + std::to_string(b));
        m.tile_off[size_t(b) + 1] = m.tile_off[size_t(b)] + (len + kKeyTile - 1) / kKeyTile;
    }
    m.mask.assign(size_t(m.tile_off[size_t(n_seq)]), 0);
    m.base.assign(size_t(m.tile_off[size_t(n_seq)]), 0);
    if (n_seq > 0 && cu_sal[0] != 0)
        throw std::invalid_argument("cu_sal[0] must be 0, got " + std::to_string(cu_sal[0]));
    for (int b = 0; b < n_seq; ++b) {
        if (cu_sal[b + 1] < cu_sal[b])
            throw std::invalid_argument("cu_sal is not non-decreasing at sequence " + std::to_string(b));
        // Every tile's base starts at the sequence's first dv row and advances past each earlier tile's keys.
        for (int32_t t = m.tile_off[size_t(b)]; t < m.tile_off[size_t(b) + 1]; ++t) m.base[size_t(t)] = cu_sal[b];
        int32_t prev = -1;
        for (int32_t s = cu_sal[b]; s < cu_sal[b + 1]; ++s) {
            const int32_t j = sal_k[s];
            if (j < cu_k[b] || j >= cu_k[b + 1])
                throw std::invalid_argument("salient key row " + std::to_string(j) + " (entry " + std::to_string(s) +
                                            ") is outside sequence " + std::to_string(b) + "'s keys [" +
                                            std::to_string(cu_k[b]) + ", " + std::to_string(cu_k[b + 1]) + ")");
            if (j <= prev)
                throw std::invalid_argument("salient key rows of sequence " + std::to_string(b) +
                                            " are not strictly ascending at entry " + std::to_string(s));
            prev             = j;
            const int32_t lk = j - cu_k[b];
            const size_t  t  = size_t(m.tile_off[size_t(b)] + lk / kKeyTile);
            m.mask[t] |= 1ull << (lk % kKeyTile);
        }
        int32_t run = cu_sal[b];
        for (int32_t t = m.tile_off[size_t(b)]; t < m.tile_off[size_t(b) + 1]; ++t) {
            m.base[size_t(t)] = run;
            run += popcount64(m.mask[size_t(t)]);
        }
    }
    return m;
}

// (query row, query head) pairs one CTA of the tiled attention kernels holds in registers: 4 warps x 4 units. A CTA
// takes up to this many query heads of one KV group (the heads that share its K/V tiles) and as many rows of its query
// tile as fit: rows * heads <= kAttnUnitsPerCta always (the kernel's per-warp register arrays depend on it).
constexpr int kAttnUnitsPerCta = 16;

DYLLM_HD int attention_heads_per_cta(int n_head, int n_kv_head) {
    const int g = n_head / n_kv_head;
    return g < kAttnUnitsPerCta ? g : kAttnUnitsPerCta;
}
DYLLM_HD int attention_rows_per_tile(int n_head, int n_kv_head) {
    return kAttnUnitsPerCta / attention_heads_per_cta(n_head, n_kv_head);
}
// CTAs per KV head: the group's heads in chunks of attention_heads_per_cta.
DYLLM_HD int attention_head_chunks(int n_head, int n_kv_head) {
    const int g = n_head / n_kv_head, h = attention_heads_per_cta(n_head, n_kv_head);
    return (g + h - 1) / h;
}

// A run of consecutive query rows [row0, row0 + n_rows) that all belong to sequence seq; one CTA of the tiled
// attention kernels per (run, KV head, head chunk).
struct QueryTile {
    int32_t row0   = 0;
    int32_t n_rows = 0;
    int32_t seq    = 0;
};

// Cuts the query rows into runs of at most max_rows rows of one sequence (q_seq need not be sorted: a change of
// sequence always starts a new run). Throws std::invalid_argument for a sequence index outside [0, n_seq).
inline std::vector<QueryTile> plan_query_tiles(const int32_t* q_seq, int64_t n_q, int n_seq, int max_rows) {
    std::vector<QueryTile> tiles;
    for (int64_t i = 0; i < n_q; ++i) {
        const int32_t b = q_seq[i];
        if (b < 0 || b >= n_seq)
            throw std::invalid_argument("query row " + std::to_string(i) + " has sequence " + std::to_string(b) +
                                        ", outside [0, " + std::to_string(n_seq) + ")");
        if (tiles.empty() || tiles.back().seq != b || tiles.back().n_rows == max_rows ||
            tiles.back().row0 + tiles.back().n_rows != i)
            tiles.push_back(QueryTile{int32_t(i), 0, b});
        ++tiles.back().n_rows;
    }
    return tiles;
}

}  // namespace dyllm
