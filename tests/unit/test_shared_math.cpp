// The host/device math of kernels/common that the CUDA kernels share with the CPU ops, tested on the CPU: RoPE angles,
// the online softmax against a two-pass softmax, cosine_from_stats' clamp, bf16/f16 rounding, the sampler's scores
// and orders, the salient key-tile masks and the query-tile plan. Finally a CPU walk of the approximate attention
// kernel's exact tiling (64-key tiles, online softmax, mask ranks) against the direct fp64 formula.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/common/attention_approx_math.h"
#include "kernels/common/dtype_convert.h"
#include "kernels/common/rms_norm_math.h"
#include "kernels/common/rope_math.h"
#include "kernels/common/scalar_math.h"
#include "kernels/common/score_math.h"
#include "kernels/common/softmax_math.h"

using namespace dyllm;

TEST_CASE("rope inverse frequencies and angles follow theta^(-2i/D)", "[shared_math][rope]") {
    const int   D     = GENERATE(16, 64, 128);
    const float theta = GENERATE(10000.0f, 500000.0f);
    for (int i = 0; i < D / 2; ++i) {
        const double want = std::pow(double(theta), -2.0 * i / D);
        // powf in fp32 vs the fp64 formula: a few fp32 ulps (2^-23 relative each).
        CHECK(std::fabs(double(rope_inv_freq(i, D, theta)) - want) <= 4 * 1.2e-7 * want);
    }
    CHECK(rope_inv_freq(0, D, theta) == 1.0f);
    // The angle is the fp32 product of position and inverse frequency (the CUDA backend's host table relies on it).
    const float f = rope_inv_freq(3, D, theta);
    CHECK(rope_angle(1000, f) == 1000.0f * f);
    CHECK(rope_angle(0, f) == 0.0f);
}

TEST_CASE("rope rotation preserves pair norms, is the identity at position 0 and composes", "[shared_math][rope]") {
    const int          D = 8;
    std::vector<float> inv(D / 2);
    for (int i = 0; i < D / 2; ++i) inv[size_t(i)] = rope_inv_freq(i, D, 10000.0f);
    std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.25f, 1.5f, 0.75f, -0.5f, 3.0f};
    std::vector<float> y = x;
    rope_rotate_head(y.data(), D, 0, inv.data());
    CHECK(y == x);
    rope_rotate_head(y.data(), D, 7, inv.data());
    for (int c = 0; c < D / 2; ++c) {
        const double n0 = std::hypot(double(x[size_t(c)]), double(x[size_t(c + D / 2)]));
        const double n1 = std::hypot(double(y[size_t(c)]), double(y[size_t(c + D / 2)]));
        CHECK(std::fabs(n0 - n1) <= 1e-6 * n0);  // fp32 rotation: a few ulps
    }
    // Pair 0 = (x[0], x[4]) (inverse frequency 1) rotated by 7 rad: x1 cos 7 - x2 sin 7, x2 cos 7 + x1 sin 7.
    CHECK(y[0] == Approx(0.5 * std::cos(7.0) - 1.5 * std::sin(7.0)).epsilon(1e-6));
    CHECK(y[4] == Approx(1.5 * std::cos(7.0) + 0.5 * std::sin(7.0)).epsilon(1e-6));
}

TEST_CASE("online softmax (push and merge) equals the two-pass softmax", "[shared_math][softmax]") {
    std::mt19937                          rng(5);
    std::uniform_real_distribution<float> u(-30.0f, 30.0f);
    const int                             n = GENERATE(1, 2, 63, 64, 65, 1000);
    std::vector<float>                    s(static_cast<size_t>(n));
    for (float& v : s) v = u(rng);
    // Two-pass reference in fp64.
    double m = -INFINITY;
    for (float v : s) m = std::max(m, double(v));
    double l = 0;
    for (float v : s) l += std::exp(double(v) - m);

    // Serial push, keeping a weighted numerator of the values themselves as the attention kernels do with V rows.
    OnlineSoftmax st;
    float         num = 0.0f;
    for (float v : s) {
        float       p     = 0.0f;
        const float scale = online_softmax_push(st, v, p);
        num               = num * scale + p * v;
    }
    double num_ref = 0;
    for (float v : s) num_ref += std::exp(double(v) - m) * v;
    CHECK(st.m == float(m));
    // fp32 accumulation of n terms each in (0, 1]: relative error below n * 2^-23 (Higham's gamma_n), plus expf ulps.
    CHECK(std::fabs(st.l - l) <= (n + 4) * 1.2e-7 * l);
    CHECK(std::fabs(double(num) / st.l - num_ref / l) <= (n + 4) * 1.2e-7 * 30.0);

    // Tree merge of chunk states (the block reductions) gives the same normaliser.
    std::vector<OnlineSoftmax> parts;
    for (int i = 0; i < n; i += 7) {
        OnlineSoftmax c;
        for (int j = i; j < std::min(n, i + 7); ++j) {
            float p;
            online_softmax_push(c, s[size_t(j)], p);
        }
        parts.push_back(c);
    }
    while (parts.size() > 1) {
        std::vector<OnlineSoftmax> next;
        for (size_t i = 0; i < parts.size(); i += 2) {
            OnlineSoftmax a = parts[i];
            if (i + 1 < parts.size()) online_softmax_merge(a, parts[i + 1]);
            next.push_back(a);
        }
        parts = next;
    }
    CHECK(parts[0].m == float(m));
    CHECK(std::fabs(parts[0].l - l) <= (n + 4) * 1.2e-7 * l);
}

TEST_CASE("online softmax edge cases: empty states and -inf scores", "[shared_math][softmax]") {
    CHECK(online_softmax_rescale(-INFINITY, 3.0f) == 0.0f);
    CHECK(online_softmax_rescale(1.0f, 1.0f) == 1.0f);
    OnlineSoftmax a, b;
    online_softmax_merge(a, b);  // both empty stays empty, no NaN
    CHECK(a.m == -INFINITY);
    CHECK(a.l == 0.0f);
    float p;
    online_softmax_push(b, 2.0f, p);
    online_softmax_merge(a, b);
    CHECK(a.m == 2.0f);
    CHECK(a.l == 1.0f);
    CHECK(p == 1.0f);
}

TEST_CASE("cosine_from_stats: the cosine, and the 1e-8 clamp of both squared norms", "[shared_math][cosine]") {
    CHECK(cosine_from_stats(2.0f, 4.0f, 1.0f) == Approx(1.0f));
    CHECK(cosine_from_stats(-1.0f, 1.0f, 1.0f) == Approx(-1.0f));
    CHECK(cosine_from_stats(0.0f, 1.0f, 1.0f) == 0.0f);
    // Zero vectors: the clamp keeps the result finite (0 / 1e-8), never NaN (kernels/README.md §f.7).
    CHECK(cosine_from_stats(0.0f, 0.0f, 0.0f) == 0.0f);
    CHECK(std::isfinite(cosine_from_stats(1e-12f, 1e-20f, 1e-20f)));
    // Below the clamp the norms count as 1e-8: dot / (1e-4 * 1e-4).
    CHECK(cosine_from_stats(1e-9f, 1e-12f, 1e-12f) == Approx(1e-9 / 1e-8).epsilon(1e-5));
}

TEST_CASE("bf16 and f16 rounding: nearest even, exact values, NaN and overflow", "[shared_math][dtype]") {
    CHECK(f32_to_bf16(1.0f) == 0x3f80);
    CHECK(bf16_to_f32(0x3f80) == 1.0f);
    // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even (1.0).
    CHECK(round_to_bf16(1.0f + 0.00390625f) == 1.0f);
    // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6).
    CHECK(round_to_bf16(1.0f + 3 * 0.00390625f) == 1.0f + 0.015625f);
    CHECK(round_to_bf16(1.0f + 0.0040f) == 1.0f + 0.0078125f);  // above the tie rounds up
    CHECK(std::isnan(round_to_bf16(NAN)));
    CHECK(std::isinf(round_to_bf16(INFINITY)));
    // bf16 keeps 8 significant bits (7 stored + the implicit one): relative rounding error at most 2^-8. The CUDA
    // test tolerances build on this bound.
    std::mt19937                          rng(3);
    std::uniform_real_distribution<float> u(-1000.0f, 1000.0f);
    for (int i = 0; i < 1000; ++i) {
        const float x = u(rng);
        CHECK(std::fabs(round_to_bf16(x) - x) <= std::ldexp(std::fabs(x), -8));
    }
    CHECK(f16_to_f32(f32_to_f16(0.333251953125f)) == 0.333251953125f);  // exactly representable in f16
    CHECK(f32_to_f16(65520.0f) == 0x7c00);                              // rounds to +inf
    CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));                 // smallest subnormal
}

TEST_CASE("negative entropy: 0 for a one-hot, -log V for uniform", "[shared_math][score]") {
    CHECK(neg_entropy_term(1.0f) == Approx(0.0f).margin(1e-9));
    CHECK(neg_entropy_term(0.0f) == 0.0f);
    const int V = 300;
    double    h = 0;
    for (int i = 0; i < V; ++i) h += neg_entropy_term(1.0f / V);
    // p log(p + 1e-10) with p = 1/300 differs from p log p by ~1e-10 * 300 relative: far below 1e-5.
    CHECK(h == Approx(-std::log(double(V))).epsilon(1e-5));
}

TEST_CASE("argmax order: first maximum wins; merges agree with the serial scan", "[shared_math][score]") {
    std::vector<float> v = {1.0f, 3.0f, 2.0f, 3.0f, NAN, -INFINITY, 3.0f};
    ArgMax             serial;
    for (int i = 0; i < int(v.size()); ++i) argmax_push(serial, v[size_t(i)], i);
    CHECK(serial.i == 1);
    CHECK(serial.v == 3.0f);
    // Strided partial scans (like CUDA threads) merged in reverse order give the same answer.
    for (int stride : {2, 3, 4}) {
        std::vector<ArgMax> parts(static_cast<size_t>(stride));
        for (int i = 0; i < int(v.size()); ++i) argmax_push(parts[size_t(i % stride)], v[size_t(i)], i);
        ArgMax all;
        for (int t = stride - 1; t >= 0; --t) argmax_merge(all, parts[size_t(t)]);
        CHECK(all.i == 1);
    }
    ArgMax only_inf;
    argmax_push(only_inf, -INFINITY, 5);
    CHECK(only_inf.i == 5);  // an allowed -inf logit is still a token
    ArgMax none;
    argmax_push(none, NAN, 2);
    CHECK(none.i == 0x7fffffff);
}

TEST_CASE("candidate order and keep rule (engine/README.md §a.9 step 5, decision 4)", "[shared_math][score]") {
    CHECK(candidate_before(0.9f, 5, 0.8f, 1));
    CHECK(candidate_before(0.8f, 1, 0.8f, 5));  // tie: lower position first
    CHECK_FALSE(candidate_before(0.8f, 5, 0.8f, 1));
    CHECK_FALSE(candidate_before(0.8f, 5, 0.8f, 5));
    CHECK(candidate_kept(0, 0.1f, 1, INFINITY));
    CHECK_FALSE(candidate_kept(1, 0.1f, 1, INFINITY));
    CHECK(candidate_kept(3, 0.95f, 1, 0.9f));
    CHECK_FALSE(candidate_kept(0, -INFINITY, 1, INFINITY));
}

TEST_CASE("rms_inv_scale is 1/sqrt(mean + eps)", "[shared_math][rms]") {
    CHECK(rms_inv_scale(16.0f, 4, 0.0f) == Approx(0.5f));
    CHECK(rms_inv_scale(0.0f, 4, 1e-6f) == Approx(1000.0f));
}

TEST_CASE("key-tile masks and ranks match a brute-force salient lookup", "[shared_math][masks]") {
    const std::vector<int32_t> cu_k   = {0, 1, 65, 65, 265};  // lengths 1, 64, 0, 200
    const std::vector<int32_t> sal_k  = {0, 1, 63, 64, 65, 127, 128, 129, 200, 264};
    const std::vector<int32_t> cu_sal = {0, 1, 4, 4, 10};
    const KeyTileMasks         m      = build_key_tile_masks(sal_k.data(), cu_sal.data(), cu_k.data(), 4);
    REQUIRE(m.tile_off == std::vector<int32_t>{0, 1, 2, 2, 6});
    for (int b = 0; b < 4; ++b) {
        for (int32_t j = cu_k[size_t(b)]; j < cu_k[size_t(b) + 1]; ++j) {
            const int32_t  lk  = j - cu_k[size_t(b)];
            const int32_t  t   = m.tile_off[size_t(b)] + lk / kKeyTile;
            const uint64_t bit = 1ull << (lk % kKeyTile);
            const auto     it  = std::find(sal_k.begin() + cu_sal[size_t(b)], sal_k.begin() + cu_sal[size_t(b) + 1], j);
            const bool     want = it != sal_k.begin() + cu_sal[size_t(b) + 1];
            CHECK(bool(m.mask[size_t(t)] & bit) == want);
            if (want)  // the dv row the kernel derives equals the position of j in sal_k
                CHECK(m.base[size_t(t)] + mask_rank(m.mask[size_t(t)], lk % kKeyTile) == int32_t(it - sal_k.begin()));
        }
    }
    CHECK(mask_rank(~0ull, 63) == 63);
    CHECK(mask_rank(0x8000000000000001ull, 63) == 1);
    CHECK(mask_rank(0x1ull, 0) == 0);
    // Empty salient sets are legal (engine/README.md decision 8): all masks zero.
    const std::vector<int32_t> cu0 = {0, 0, 0, 0, 0};
    const KeyTileMasks         m0  = build_key_tile_masks(nullptr, cu0.data(), cu_k.data(), 4);
    CHECK(std::all_of(m0.mask.begin(), m0.mask.end(), [](uint64_t x) { return x == 0; }));
}

TEST_CASE("key-tile masks reject unsorted, duplicate or out-of-sequence salient rows", "[shared_math][masks]") {
    const std::vector<int32_t> cu_k     = {0, 10, 20};
    const std::vector<int32_t> cu_sal   = {0, 2, 3};
    const std::vector<int32_t> unsorted = {5, 3, 12}, dup = {3, 3, 12}, outside = {3, 5, 9};
    CHECK_THROWS_WITH(build_key_tile_masks(unsorted.data(), cu_sal.data(), cu_k.data(), 2),
                      Catch::Contains("not strictly ascending"));
    CHECK_THROWS_WITH(build_key_tile_masks(dup.data(), cu_sal.data(), cu_k.data(), 2),
                      Catch::Contains("not strictly ascending"));
    CHECK_THROWS_WITH(build_key_tile_masks(outside.data(), cu_sal.data(), cu_k.data(), 2),
                      Catch::Contains("outside sequence 1"));
}

TEST_CASE("query tiles are runs of one sequence of bounded length", "[shared_math][tiles]") {
    const std::vector<int32_t> q_seq = {0, 0, 0, 0, 0, 1, 1, 0, 2, 2, 2};
    const auto                 t     = plan_query_tiles(q_seq.data(), int64_t(q_seq.size()), 3, 2);
    int64_t                    rows  = 0;
    for (size_t i = 0; i < t.size(); ++i) {
        CHECK(t[i].row0 == rows);
        CHECK(t[i].n_rows >= 1);
        CHECK(t[i].n_rows <= 2);
        for (int r = 0; r < t[i].n_rows; ++r) CHECK(q_seq[size_t(t[i].row0 + r)] == t[i].seq);
        rows += t[i].n_rows;
    }
    CHECK(rows == int64_t(q_seq.size()));
    CHECK(t.size() == 7);  // 2+2+1 | 2 | 1 | 2+1
    CHECK(plan_query_tiles(nullptr, 0, 1, 16).empty());
    const std::vector<int32_t> bad = {0, 3};
    CHECK_THROWS_WITH(plan_query_tiles(bad.data(), 2, 3, 16), Catch::Contains("query row 1 has sequence 3"));
}

TEST_CASE("attention CTA plan: rows x heads fit the kernel's units, chunks cover each KV group",
          "[shared_math][tiles]") {
    for (int n_kv = 1; n_kv <= 8; ++n_kv)
        for (int g = 1; g <= 64; ++g) {
            const int n_head = g * n_kv;
            const int h = attention_heads_per_cta(n_head, n_kv), r = attention_rows_per_tile(n_head, n_kv);
            const int chunks = attention_head_chunks(n_head, n_kv);
            INFO("n_head " << n_head << ", n_kv_head " << n_kv);
            CHECK(h >= 1);
            CHECK(r >= 1);
            CHECK(h * r <= kAttnUnitsPerCta);
            CHECK(chunks * h >= g);       // every head of the group is some CTA's
            CHECK((chunks - 1) * h < g);  // and no chunk is empty
        }
    CHECK(attention_rows_per_tile(32, 32) == 16);  // LLaDA (MHA): 16 rows of one head
    CHECK(attention_heads_per_cta(28, 4) == 7);    // Dream (GQA 7:1): 7 heads x 2 rows
    CHECK(attention_rows_per_tile(28, 4) == 2);
}

namespace {

// The approximate attention of one (query row, head) computed the way the CUDA kernel walks it: 64-key tiles, the
// online softmax over all keys, P x dV only over each tile's mask bits with dv rows from base + rank. fp32.
std::vector<float> tiled_approx_row(const std::vector<float>& q, const std::vector<float>& k,
                                    const std::vector<float>& dv, const KeyTileMasks& m, int b, int k0, int nk, int D) {
    const float        scale = 1.0f / std::sqrt(float(D));
    OnlineSoftmax      st;
    std::vector<float> o(size_t(D), 0.0f);
    for (int t0 = 0; t0 < nk; t0 += kKeyTile) {
        const int          nt = std::min(kKeyTile, nk - t0);
        std::vector<float> p(static_cast<size_t>(nt));
        // Tile max first, then one rescale per tile (as the kernel does with its warp max).
        float              tmax = -INFINITY;
        std::vector<float> s(static_cast<size_t>(nt));
        for (int j = 0; j < nt; ++j) {
            float acc = 0.0f;
            for (int c = 0; c < D; ++c) acc += q[size_t(c)] * scale * k[size_t((k0 + t0 + j) * D + c)];
            s[size_t(j)] = acc;
            tmax         = std::max(tmax, acc);
        }
        const float m_new = std::max(st.m, tmax);
        const float resc  = online_softmax_rescale(st.m, m_new);
        float       sum   = 0.0f;
        for (int j = 0; j < nt; ++j) sum += (p[size_t(j)] = std::exp(s[size_t(j)] - m_new));
        st.l = st.l * resc + sum;
        st.m = m_new;
        for (float& v : o) v *= resc;
        const int      kt   = m.tile_off[size_t(b)] + t0 / kKeyTile;
        const uint64_t mask = m.mask[size_t(kt)];
        for (int j = 0; j < nt; ++j) {
            if (!(mask >> j & 1)) continue;
            const int row = m.base[size_t(kt)] + mask_rank(mask, j);
            for (int c = 0; c < D; ++c) o[size_t(c)] += p[size_t(j)] * dv[size_t(row * D + c)];
        }
    }
    for (float& v : o) v = st.l > 0 ? v / st.l : 0.0f;
    return o;
}

}  // namespace

TEST_CASE("the approximate attention kernel's tiling equals the direct formula (CPU walk)", "[shared_math][approx]") {
    const int                       D    = 16;
    const std::vector<int32_t>      lens = {GENERATE(1, 63, 64, 65, 130), 7};
    const std::vector<int32_t>      cu_k = {0, lens[0], lens[0] + lens[1]};
    const int                       nk   = cu_k.back();
    std::mt19937                    rng(11);
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<float>              q(static_cast<size_t>(D)), k(static_cast<size_t>(nk * D));
    for (float& v : q) v = 2.0f * g(rng);
    for (float& v : k) v = g(rng);
    // Salient keys of sequence 0: every third key (sorted), including the last; sequence 1: none (empty set).
    std::vector<int32_t> sal;
    for (int j = 0; j < lens[0]; j += 3) sal.push_back(j);
    if (sal.back() != lens[0] - 1) sal.push_back(lens[0] - 1);
    const std::vector<int32_t> cu_sal = {0, int32_t(sal.size()), int32_t(sal.size())};
    std::vector<float>         dv(sal.size() * D);
    for (float& v : dv) v = g(rng);
    const KeyTileMasks m = build_key_tile_masks(sal.data(), cu_sal.data(), cu_k.data(), 2);

    // Direct formula in fp64 (kernels/README.md §b.1): softmax over all keys, sum over the salient ones.
    std::vector<double> s(static_cast<size_t>(lens[0]));
    double              mx = -INFINITY, l = 0;
    for (int j = 0; j < lens[0]; ++j) {
        double acc = 0;
        for (int c = 0; c < D; ++c) acc += double(q[size_t(c)]) * k[size_t(j * D + c)];
        s[size_t(j)] = acc / std::sqrt(double(D));
        mx           = std::max(mx, s[size_t(j)]);
    }
    for (double& v : s) l += (v = std::exp(v - mx));
    std::vector<double> want(size_t(D), 0.0);
    for (size_t t = 0; t < sal.size(); ++t)
        for (int c = 0; c < D; ++c) want[size_t(c)] += s[size_t(sal[t])] / l * dv[t * D + c];

    const std::vector<float> got = tiled_approx_row(q, k, dv, m, 0, 0, lens[0], D);
    for (int c = 0; c < D; ++c)  // fp32 over <= 130 keys: ~1e-6 relative of the O(1) terms; 1e-5 absolute leaves room
        CHECK(std::fabs(got[size_t(c)] - want[size_t(c)]) <= 1e-5);
    // Sequence 1 has no salient key: the correction is exactly zero.
    const std::vector<float> none = tiled_approx_row(q, k, dv, m, 1, cu_k[1], lens[1], D);
    for (float v : none) CHECK(v == 0.0f);
}
