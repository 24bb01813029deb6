// Every Backend op on CUDA against the CPU backend (the CPU ops are themselves tested against kernels/cpu/ref), with
// shapes including 1, odd sizes and non-multiples of the kernels' tiles (64 keys, 16 query units), empty salient sets
// and GQA 1:1, 4:1 and 7:1.
//
// Tolerances (per element, |cuda - cpu| <= bound), from the precision each path actually has:
// - exact (0): embed, gather/scatter, copy, add/sub: the same IEEE fp32 operation or the same shared bf16/f16
//   rounding function (kernels/common/dtype_convert.h) on both sides.
// - transcendental ulps: silu (expf), rope (sincosf; the angles are bit-identical because the CUDA backend uploads the
//   host's rope_inv_freq table): CUDA's expf/sinf/cosf are within 2 ulp (CUDA C++ Programming Guide, "Mathematical
//   Functions" table), glibc's within 1, so a few 2^-23-relative ulps per result: bounds of 1e-6 relative.
// - matmul: CUDA rounds the F32 activation to bf16 (weights are the same bf16/f16 values on both sides): each product
//   changes by at most 2^-8 relative (bf16 keeps 8 significant bits), so |diff| <= 2^-8 * sum_i |x_i w_i|, plus fp32
//   accumulation-order differences of at most k * 2^-24 * sum_i |x_i w_i| (Higham's gamma_k) on each side.
// - reductions in fp32 (rms_norm, cosine, attention softmax and weighted sums, score_logits' normaliser): summation
//   order differs, bounded by n * 2^-24 relative for n terms; the bounds below use that with n the reduction length.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "cuda/cuda_test_util.h"

using namespace dyllm;
using namespace dyllm::cuda_test;

namespace {

constexpr double kU24 = 5.9604644775390625e-08;  // 2^-24, fp32 unit roundoff

}  // namespace

TEST_CASE("cuda backend reports itself", "[cuda][backend]") {
    Backend& g = *backends().gpu;
    CHECK(std::string(g.name()) == "cuda");
    CHECK(g.device() == Device::Cuda);
    CHECK(g.cache_dtype() == DType::BF16);
    CHECK(g.description().rfind("cuda (", 0) == 0);
    CHECK(g.supports(OpKind::AttentionApprox, DType::BF16));
    CHECK_FALSE(g.supports(OpKind::Rope, DType::BF16));
}

TEST_CASE("alloc is zeroed; upload/download round trip", "[cuda][memory]") {
    Backend&      g    = *backends().gpu;
    const int64_t rows = GENERATE(0, 1, 7, 130), cols = GENERATE(1, 17, 300);
    const DType   dt   = GENERATE(DType::F32, DType::BF16, DType::F16);
    Tensor        t    = g.alloc(dt, rows, cols);
    const auto    zero = fetch(g, t.view());
    CHECK(std::all_of(zero.begin(), zero.end(), [](float x) { return x == 0.0f; }));
    const auto v = quantize(random_values(size_t(rows * cols), 1), dt);
    Tensor     u = make_tensor(g, dt, rows, cols, v);
    CHECK(fetch(g, u.view()) == v);
}

TEST_CASE("embed matches the CPU exactly", "[cuda][embed]") {
    auto&                      b   = backends();
    const DType                dt  = GENERATE(DType::F32, DType::BF16, DType::F16);
    const int64_t              V = 97, E = GENERATE(1, 17, 300);
    const std::vector<int32_t> ids = {0, 96, 5, 5, 42, 1, 77};
    const auto                 tv  = random_values(size_t(V * E), 2);
    HostWeight                 kc, kg;
    const TensorView           tc = make_weight(*b.cpu, kc, dt, V, E, tv), tg = make_weight(*b.gpu, kg, dt, V, E, tv);
    Tensor oc = b.cpu->alloc(DType::F32, int64_t(ids.size()), E), og = b.gpu->alloc(DType::F32, int64_t(ids.size()), E);
    b.cpu->embed(tc, ids, oc);
    b.gpu->embed(tg, ids, og);
    // Exact for BF16/F16 tables (the same stored values); an F32 table is stored as bf16 on CUDA: 2^-8 relative.
    const auto ref = fetch(*b.cpu, oc);
    check_close("embed", fetch(*b.gpu, og), ref,
                [&](size_t e) { return dt == DType::F32 ? std::ldexp(std::fabs(double(ref[e])), -8) : 0.0; });
    // An empty id list is legal.
    Tensor e0 = b.gpu->alloc(DType::F32, 0, E);
    b.gpu->embed(tg, {}, e0);
}

TEST_CASE("matmul (bf16 activations, fp32 accumulation) is within the bf16 rounding bound", "[cuda][matmul]") {
    auto&   b = backends();
    const auto [n, k, m] = GENERATE(std::make_tuple(1, 1, 1), std::make_tuple(7, 17, 5), std::make_tuple(65, 300, 33),
                                    std::make_tuple(130, 64, 257), std::make_tuple(3, 0, 4));
    const DType wdt      = GENERATE(DType::BF16, DType::F16, DType::F32);
    const bool  use_bias = GENERATE(false, true);
    const auto  xv = random_values(size_t(n * k), 3), wv = random_values(size_t(m * k), 4, 0.1f),
               bv = random_values(size_t(m), 5);
    HostWeight       kc, kg, bc, bg;
    const TensorView wc = make_weight(*b.cpu, kc, wdt, m, k, wv), wg = make_weight(*b.gpu, kg, wdt, m, k, wv);
    TensorView       biasc, biasg;
    if (use_bias) {
        biasc = make_weight(*b.cpu, bc, DType::F32, 1, m, bv);
        biasg = make_weight(*b.gpu, bg, DType::F32, 1, m, bv);
    }
    Tensor xc = make_tensor(*b.cpu, DType::F32, n, k, xv), xg = make_tensor(*b.gpu, DType::F32, n, k, xv);
    Tensor yc = b.cpu->alloc(DType::F32, n, m), yg = b.gpu->alloc(DType::F32, n, m);
    b.cpu->matmul(xc, wc, biasc, yc);
    b.gpu->matmul(xg, wg, biasg, yg);
    // The CUDA backend stores F32 weights (and biases) as bf16, so the bound uses the CPU's values: the weight
    // rounding adds another 2^-8 relative per product in the F32 case (and 2^-8 |bias|).
    const auto   wq    = quantize(wv, wdt);
    const double w_rel = (wdt == DType::F32) ? 2.0 * std::ldexp(1.0, -8) : std::ldexp(1.0, -8);
    std::vector<double> absdot(size_t(n * m), 0.0);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < m; ++j)
            for (int c = 0; c < k; ++c)
                absdot[size_t(i * m + j)] += std::fabs(double(xv[size_t(i * k + c)]) * wq[size_t(j * k + c)]);
    check_close("matmul", fetch(*b.gpu, yg), fetch(*b.cpu, yc), [&](size_t e) {
        const double bias_err = use_bias ? std::ldexp(std::fabs(double(bv[e % size_t(m)])), -8) : 0.0;
        return (w_rel + 2.0 * (k + 2) * kU24) * absdot[e] + bias_err + 1e-6;
    });
}

TEST_CASE("rms_norm matches within fp32 reduction-order error", "[cuda][rms_norm]") {
    auto&         b = backends();
    const int64_t n = GENERATE(1, 7, 130), d = GENERATE(1, 17, 300);
    const DType   wdt = GENERATE(DType::F32, DType::BF16);
    const auto    xv = random_values(size_t(n * d), 6, 3.0f), wv = random_values(size_t(d), 7);
    HostWeight    kc, kg;
    const TensorView wc = make_weight(*b.cpu, kc, wdt, 1, d, wv), wg = make_weight(*b.gpu, kg, wdt, 1, d, wv);
    Tensor xc = make_tensor(*b.cpu, DType::F32, n, d, xv), xg = make_tensor(*b.gpu, DType::F32, n, d, xv);
    Tensor yc = b.cpu->alloc(DType::F32, n, d), yg = b.gpu->alloc(DType::F32, n, d);
    b.cpu->rms_norm(xc, wc, 1e-5f, yc);
    b.gpu->rms_norm(xg, wg, 1e-5f, yg);
    const auto ref = fetch(*b.cpu, yc);
    // The F32 weight is bf16 on CUDA: 2^-8 relative. Sum of d squares in another order: d * 2^-24 relative, halved by
    // the rsqrt; a few ulps for the products.
    const double rel = (wdt == DType::F32 ? std::ldexp(1.0, -8) : 0.0) + (double(d) + 8.0) * kU24;
    check_close("rms_norm", fetch(*b.gpu, yg), ref, [&](size_t e) { return rel * std::fabs(double(ref[e])) + 1e-7; });
    // In place (y aliases x).
    b.gpu->rms_norm(xg, wg, 1e-5f, xg);
    check_close("rms_norm_inplace", fetch(*b.gpu, xg), fetch(*b.gpu, yg), [](size_t) { return 0.0; });
}

TEST_CASE("rope: bit-identical angles, sin/cos within a few ulps", "[cuda][rope]") {
    auto&     b = backends();
    const int n_head = GENERATE(1, 3), head_dim = GENERATE(2, 16, 128);
    const int n = GENERATE(1, 7, 65);
    const float theta = GENERATE(10000.0f, 500000.0f);
    const int64_t cols = int64_t(n_head) * head_dim;
    const auto    xv   = random_values(size_t(n * cols), 8);
    std::vector<int32_t> pos(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) pos[size_t(i)] = (i * 37) % 1500;  // up to ~1500 rad: large-argument sin/cos
    Tensor xc = make_tensor(*b.cpu, DType::F32, n, cols, xv), xg = make_tensor(*b.gpu, DType::F32, n, cols, xv);
    b.cpu->rope(xc, pos, n_head, head_dim, theta);
    b.gpu->rope(xg, pos, n_head, head_dim, theta);
    // Each output is x1 cos - x2 sin (or x2 cos + x1 sin): cos/sin within 3 ulp (2 CUDA + 1 glibc) of magnitude <= 1
    // gives |diff| <= 3 * 2^-23 * (|x1| + |x2|), plus the rounding of the two products and the sum.
    const int half = head_dim / 2;
    check_close("rope", fetch(*b.gpu, xg), fetch(*b.cpu, xc), [&](size_t e) {
        const size_t base = e - e % size_t(head_dim);
        const size_t c    = (e - base) % size_t(half);
        const double mag  = std::fabs(double(xv[base + c])) + std::fabs(double(xv[base + c + size_t(half)]));
        return 10.0 * 2.0 * kU24 * mag + 1e-30;
    });
    b.gpu->rope(b.gpu->alloc(DType::F32, 0, cols), {}, n_head, head_dim, theta);  // zero rows are legal
}

TEST_CASE("add, sub and copy are exact in every dtype mix; silu_mul within expf ulps", "[cuda][elementwise]") {
    auto&         b  = backends();
    const int64_t n  = GENERATE(1, 7, 130), c = GENERATE(1, 17, 300);
    const DType   da = GENERATE(DType::F32, DType::BF16), dy = GENERATE(DType::F32, DType::BF16);
    const auto    av = random_values(size_t(n * c), 9), bv = random_values(size_t(n * c), 10);
    for (int op = 0; op < 3; ++op) {
        Tensor ac = make_tensor(*b.cpu, da, n, c, av), ag = make_tensor(*b.gpu, da, n, c, av);
        Tensor bc = make_tensor(*b.cpu, DType::F32, n, c, bv), bg = make_tensor(*b.gpu, DType::F32, n, c, bv);
        Tensor yc = b.cpu->alloc(dy, n, c), yg = b.gpu->alloc(dy, n, c);
        const char* name = op == 0 ? "add" : op == 1 ? "sub" : "copy";
        if (op == 0) {
            b.cpu->add(ac, bc, yc);
            b.gpu->add(ag, bg, yg);
        } else if (op == 1) {
            b.cpu->sub(ac, bc, yc);
            b.gpu->sub(ag, bg, yg);
        } else {
            b.cpu->copy(ac, yc);
            b.gpu->copy(ag, yg);
        }
        check_close(name, fetch(*b.gpu, yg), fetch(*b.cpu, yc), [](size_t) { return 0.0; });
    }
    // silu_mul: F32 only; y aliases gate too.
    Tensor gc = make_tensor(*b.cpu, DType::F32, n, c, av), gg = make_tensor(*b.gpu, DType::F32, n, c, av);
    Tensor uc = make_tensor(*b.cpu, DType::F32, n, c, bv), ug = make_tensor(*b.gpu, DType::F32, n, c, bv);
    b.cpu->silu_mul(gc, uc, gc);
    b.gpu->silu_mul(gg, ug, gg);
    const auto ref = fetch(*b.cpu, gc);
    // expf: <= 2 ulp on CUDA, <= 4 ulp for glibc's scalar or vector (libmvec) expf; then 1 + e, a division and a
    // product (0.5 ulp each): under 8 ulp; bound at 16 ulp (one ulp <= 2^-23 relative).
    check_close("silu_mul", fetch(*b.gpu, gg), ref,
                [&](size_t e) { return 16.0 * 2.0 * kU24 * std::fabs(double(ref[e])) + 1e-30; });
}

TEST_CASE("gather_rows and scatter_rows are exact, with conversion and empty lists", "[cuda][rows]") {
    auto&                      b   = backends();
    const int64_t              R = 70, C = GENERATE(1, 17, 300);
    const DType                ds = GENERATE(DType::F32, DType::BF16), dd = GENERATE(DType::F32, DType::BF16);
    const std::vector<int32_t> idx = {69, 0, 5, 64, 63, 1, 33};
    const auto                 sv  = random_values(size_t(R * C), 11);
    Tensor sc = make_tensor(*b.cpu, ds, R, C, sv), sg = make_tensor(*b.gpu, ds, R, C, sv);
    Tensor dc = b.cpu->alloc(dd, int64_t(idx.size()), C), dg = b.gpu->alloc(dd, int64_t(idx.size()), C);
    b.cpu->gather_rows(sc, idx, dc);
    b.gpu->gather_rows(sg, idx, dg);
    check_close("gather_rows", fetch(*b.gpu, dg), fetch(*b.cpu, dc), [](size_t) { return 0.0; });
    // Scatter the gathered rows into a fresh zero matrix.
    Tensor tc = b.cpu->alloc(ds, R, C), tg = b.gpu->alloc(ds, R, C);
    b.cpu->scatter_rows(dc, idx, tc);
    b.gpu->scatter_rows(dg, idx, tg);
    check_close("scatter_rows", fetch(*b.gpu, tg), fetch(*b.cpu, tc), [](size_t) { return 0.0; });
    Tensor none = b.gpu->alloc(dd, 0, C);
    b.gpu->gather_rows(sg, {}, none);
    b.gpu->scatter_rows(none, {}, tg);
}

TEST_CASE("cosine_rows within fp32 reduction-order error, zero rows clamp", "[cuda][cosine]") {
    auto&         b = backends();
    const int64_t n = GENERATE(1, 7, 130), w = GENERATE(1, 17, 512);
    const DType   dt = GENERATE(DType::F32, DType::BF16);
    auto          av = random_values(size_t(n * w), 12), bv = random_values(size_t(n * w), 13);
    for (int64_t c = 0; c < w; ++c) {
        bv[size_t(c)] = av[size_t(c)] * 0.5f + bv[size_t(c)] * 1e-3f;  // row 0 nearly parallel: cos near 1
        if (n > 1) av[size_t(w + c)] = 0.0f;                           // row 1 of a is zero: clamp path
    }
    Tensor ac = make_tensor(*b.cpu, dt, n, w, av), ag = make_tensor(*b.gpu, dt, n, w, av);
    Tensor bc = make_tensor(*b.cpu, DType::F32, n, w, bv), bg = make_tensor(*b.gpu, DType::F32, n, w, bv);
    std::vector<float> cc(static_cast<size_t>(n)), cg(static_cast<size_t>(n));
    b.cpu->cosine_rows(ac, bc, cc);
    b.gpu->cosine_rows(ag, bg, cg);
    // |d cos| <= 2 gamma_w by Cauchy-Schwarz (dot error <= w 2^-24 sum|ab| <= w 2^-24 |a||b|; norms likewise).
    check_close("cosine_rows", cg, cc, [&](size_t) { return 4.0 * (double(w) + 4.0) * kU24; });
}

TEST_CASE("score_logits: identical tokens (first maximum, banned ids), scores within fp32 sums", "[cuda][score]") {
    auto&         b = backends();
    const int64_t n = GENERATE(1, 7, 65), V = GENERATE(2, 300, 1500);
    const ScoreKind kind = GENERATE(ScoreKind::Confidence, ScoreKind::NegEntropy);
    auto          lv = random_values(size_t(n * V), 14, 3.0f);
    // Ties: row 0 has its maximum twice (the lower id must win); the banned ids include a row's maximum.
    lv[size_t(V - 1)] = 50.0f;
    lv[0]             = 50.0f;
    if (n > 1) lv[size_t(V + 1)] = 60.0f;  // banned below
    const std::vector<int32_t> banned = V > 2 ? std::vector<int32_t>{1, int32_t(V - 2), 1} : std::vector<int32_t>{};
    Tensor lc = make_tensor(*b.cpu, DType::F32, n, V, lv), lg = make_tensor(*b.gpu, DType::F32, n, V, lv);
    std::vector<int32_t> tc(static_cast<size_t>(n)), tg(static_cast<size_t>(n));
    std::vector<float>   sc(static_cast<size_t>(n)), sg(static_cast<size_t>(n));
    b.cpu->score_logits(lc, kind, banned, tc, sc);
    b.gpu->score_logits(lg, kind, banned, tg, sg);
    CHECK(tg == tc);
    CHECK(tg[0] == 0);
    // Normaliser of V exps in fp32 (CUDA) vs fp64 (CPU): V 2^-24 relative; the entropy sum likewise, scaled by its
    // largest term |p log p| <= 1/e and at least 1e-6 absolute.
    check_close("score_logits", sg, sc, [&](size_t e) {
        return 2.0 * (double(V) + 8.0) * kU24 * std::max(1.0, std::fabs(double(sc[e]))) + 1e-6;
    });
}

namespace {

struct AttnCase {
    std::vector<int32_t> lens;   // keys per sequence
    int                  n_head, n_kv_head, head_dim;
};

// q rows: either all rows of every sequence (FULL step) or a scattered subset (salient rows, any order).
std::vector<int32_t> query_rows(const std::vector<int32_t>& cu_k, bool subset) {
    std::vector<int32_t> q_seq;
    const int            B = int(cu_k.size()) - 1;
    if (!subset) {
        for (int b = 0; b < B; ++b)
            for (int j = cu_k[size_t(b)]; j < cu_k[size_t(b) + 1]; ++j) q_seq.push_back(b);
        return q_seq;
    }
    for (int b = B - 1; b >= 0; --b)  // sequences in reverse, a few rows each, interleaved with sequence 0
        for (int j = 0; j < std::min(5, cu_k[size_t(b) + 1] - cu_k[size_t(b)]); ++j) {
            q_seq.push_back(b);
            if (j % 2 == 1) q_seq.push_back(0);
        }
    return q_seq;
}

std::vector<int32_t> offsets(const std::vector<int32_t>& lens) {
    std::vector<int32_t> cu(lens.size() + 1, 0);
    std::partial_sum(lens.begin(), lens.end(), cu.begin() + 1);
    return cu;
}

}  // namespace

TEST_CASE("exact attention (varlen, GQA, tiles) matches the CPU", "[cuda][attention]") {
    auto&          b  = backends();
    const AttnCase ac = GENERATE(AttnCase{{1, 65, 130}, 4, 4, 16}, AttnCase{{63, 64}, 8, 2, 64},
                                 AttnCase{{1, 1}, 7, 1, 128}, AttnCase{{130, 0, 17}, 7, 1, 64},
                                 AttnCase{{300}, 32, 32, 128}, AttnCase{{40, 3}, 32, 1, 256});
    const bool     subset = GENERATE(false, true);
    const DType    kvdt   = GENERATE(DType::F32, DType::BF16);
    const auto     cu_k   = offsets(ac.lens);
    const auto     q_seq  = query_rows(cu_k, subset);
    const int64_t  nq = int64_t(q_seq.size()), nk = cu_k.back();
    const int64_t  qd = int64_t(ac.n_head) * ac.head_dim, kvd = int64_t(ac.n_kv_head) * ac.head_dim;
    const auto     qv = random_values(size_t(nq * qd), 15, 1.5f), kv = random_values(size_t(nk * kvd), 16),
               vv = random_values(size_t(nk * kvd), 17);
    const AttentionShape shape{ac.n_head, ac.n_kv_head, ac.head_dim};
    Tensor qc = make_tensor(*b.cpu, DType::F32, nq, qd, qv), qg = make_tensor(*b.gpu, DType::F32, nq, qd, qv);
    Tensor kc = make_tensor(*b.cpu, kvdt, nk, kvd, kv), kg = make_tensor(*b.gpu, kvdt, nk, kvd, kv);
    Tensor vc = make_tensor(*b.cpu, kvdt, nk, kvd, vv), vg = make_tensor(*b.gpu, kvdt, nk, kvd, vv);
    Tensor oc = b.cpu->alloc(DType::F32, nq, qd), og = b.gpu->alloc(DType::F32, nq, qd);
    b.cpu->attention(qc, q_seq, kc, vc, cu_k, shape, oc);
    b.gpu->attention(qg, q_seq, kg, vg, cu_k, shape, og);
    // Scores differ by ~D 2^-24 |q||k| / sqrt(D) between summation orders (~1e-6 here), which moves each softmax
    // weight by that relative amount; the output is a convex combination of V rows: |diff| <= ~1e-6 max|v|. 1e-5
    // leaves a 10x margin for expf ulps and the weighted sum over up to 300 keys (300 2^-24 = 1.8e-5 relative).
    const double vmax = max_abs(vv);
    check_close("attention", fetch(*b.gpu, og), fetch(*b.cpu, oc), [&](size_t) { return 4e-5 * vmax + 1e-6; });
}

TEST_CASE("column-sparse approximate attention matches the CPU, including empty salient sets", "[cuda][approx]") {
    auto&          b  = backends();
    const AttnCase ac = GENERATE(AttnCase{{1, 65, 130}, 4, 4, 16}, AttnCase{{63, 64}, 8, 2, 64},
                                 AttnCase{{130, 0, 17}, 7, 1, 128}, AttnCase{{300}, 32, 32, 128});
    const int      every = GENERATE(0, 1, 5, 64);  // 0: empty salient set; 1: all keys salient; 64: one per tile
    const bool     subset = GENERATE(false, true);
    const DType    kvdt   = GENERATE(DType::F32, DType::BF16);
    const auto     cu_k   = offsets(ac.lens);
    const auto     q_seq  = query_rows(cu_k, subset);
    const int      B      = int(ac.lens.size());
    std::vector<int32_t> sal_k, cu_sal{0};
    for (int bi = 0; bi < B; ++bi) {
        // The last sequence keeps an empty set whatever `every` is (spec decision 8: empty per-sequence sets).
        if (every > 0 && (bi < B - 1 || B == 1))
            for (int j = 0; j < ac.lens[size_t(bi)]; j += every) sal_k.push_back(cu_k[size_t(bi)] + j);
        cu_sal.push_back(int32_t(sal_k.size()));
    }
    const int64_t nq = int64_t(q_seq.size()), nk = cu_k.back(), ns = int64_t(sal_k.size());
    const int64_t qd = int64_t(ac.n_head) * ac.head_dim, kvd = int64_t(ac.n_kv_head) * ac.head_dim;
    const auto    qv = random_values(size_t(nq * qd), 18, 1.5f), kv = random_values(size_t(nk * kvd), 19),
               dvv = random_values(size_t(ns * kvd), 20, 0.1f), cv = random_values(size_t(nq * qd), 21);
    const AttentionShape shape{ac.n_head, ac.n_kv_head, ac.head_dim};
    Tensor qc = make_tensor(*b.cpu, DType::F32, nq, qd, qv), qg = make_tensor(*b.gpu, DType::F32, nq, qd, qv);
    Tensor kc = make_tensor(*b.cpu, kvdt, nk, kvd, kv), kg = make_tensor(*b.gpu, kvdt, nk, kvd, kv);
    Tensor dc = make_tensor(*b.cpu, kvdt, ns, kvd, dvv), dg = make_tensor(*b.gpu, kvdt, ns, kvd, dvv);
    Tensor cc = make_tensor(*b.cpu, kvdt, nq, qd, cv), cg = make_tensor(*b.gpu, kvdt, nq, qd, cv);
    Tensor nc = b.cpu->alloc(DType::F32, nq, qd), ng = b.gpu->alloc(DType::F32, nq, qd);
    b.cpu->attention_approx(qc, q_seq, kc, dc, sal_k, cu_sal, cu_k, cc, shape, nc);
    b.gpu->attention_approx(qg, q_seq, kg, dg, sal_k, cu_sal, cu_k, cg, shape, ng);
    const auto ref = fetch(*b.cpu, nc);
    // As for exact attention, relative to the dv scale; plus the fp32 add of c_old (one rounding of |c_new|).
    const double dmax = std::max(max_abs(dvv), 1e-3);
    check_close("attention_approx", fetch(*b.gpu, ng), ref,
                [&](size_t e) { return 4e-5 * dmax + 2.0 * kU24 * std::fabs(double(ref[e])) + 1e-7; });
    if (every == 0) {  // nothing salient: c_new == c_old exactly
        const auto cq = quantize(cv, kvdt);
        check_close("attention_approx_empty", fetch(*b.gpu, ng), cq, [](size_t) { return 0.0; });
    }
}
