// Optimised CPU kernels (kernels/cpu) against the plain references (kernels/cpu/ref), table-driven over shapes, plus
// hand-checked properties of the references themselves and of the thread pool. Attention is in
// test_kernels_attention.cpp.
#include <catch2/catch.hpp>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <tuple>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/cosine.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/embed.h"
#include "kernels/cpu/huge_page_buffer.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ref/cosine.h"
#include "kernels/cpu/ref/elementwise.h"
#include "kernels/cpu/ref/embed.h"
#include "kernels/cpu/ref/matmul.h"
#include "kernels/cpu/ref/rms_norm.h"
#include "kernels/cpu/ref/rope.h"
#include "kernels/cpu/ref/rows.h"
#include "kernels/cpu/ref/score_logits.h"
#include "kernels/cpu/ref/silu_mul.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/rows.h"
#include "kernels/cpu/score_logits.h"
#include "kernels/cpu/silu_mul.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/thread_pool.h"
#include "unit/test_kernels_util.h"

#pragma GCC diagnostic ignored "-Wpsabi"  // 16-lane values in the exp test (see kernels/cpu/simd.h)

using namespace dyllm;
using namespace dyllm::cpu;
using dyllm::test::all_close;
using dyllm::test::kU32;
using dyllm::test::make_stored;
using dyllm::test::random_floats;

namespace {
MatF matf(std::vector<float>& v, int64_t rows, int64_t cols) {
    return MatF{v.data(), rows, cols, cols};
}
CMatF cmatf(const std::vector<float>& v, int64_t rows, int64_t cols) {
    return CMatF{v.data(), rows, cols, cols};
}
}  // namespace

TEST_CASE("thread pool runs every task exactly once, nested calls inline", "[kernels][pool]") {
    const int  threads = GENERATE(1, 2, 3);
    ThreadPool pool(threads);
    REQUIRE(pool.size() == threads);
    for (int64_t n : {0, 1, 2, 7, 1000}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::atomic<int>              bad_thread{0};
        pool.parallel_for(n, [&](int64_t t, int th) {
            hits[size_t(t)].fetch_add(1);
            if (th < 0 || th >= threads) bad_thread.fetch_add(1);
            // A nested call runs inline on this thread with this thread's index.
            pool.parallel_for(2, [&](int64_t, int th2) {
                if (th2 != th) bad_thread.fetch_add(1);
            });
        });
        for (int64_t t = 0; t < n; ++t) REQUIRE(hits[size_t(t)].load() == 1);
        REQUIRE(bad_thread.load() == 0);
    }
}

TEST_CASE("reference matmul matches hand-computed values", "[kernels][ref]") {
    // x = [[1, 2], [3, 4]], W = [[1, 0], [1, 1], [0, -1]], b = [0.5, 0, 1] -> y = x W^T + b
    std::vector<float> x = {1, 2, 3, 4}, w = {1, 0, 1, 1, 0, -1}, b = {0.5f, 0, 1}, y(6);
    ref::matmul(cmatf(x, 2, 2), ConstMat{w.data(), ElemType::F32, 3, 2, 2}, ConstMat{b.data(), ElemType::F32, 1, 3, 3},
                matf(y, 2, 3));
    const std::vector<float> expect = {1.5f, 3, -1, 3.5f, 7, -3};
    CHECK(y == expect);
}

TEST_CASE("optimised matmul equals the reference", "[kernels][matmul]") {
    // (n, k, m): 1, odd sizes, sizes off any block or panel multiple (panel 256), an empty row set, one larger case.
    const auto [n, k, m]   = GENERATE(table<int64_t, int64_t, int64_t>({{1, 1, 1},
                                                                        {0, 16, 8},
                                                                        {3, 0, 4},
                                                                        {1, 64, 300},
                                                                        {3, 5, 7},
                                                                        {17, 33, 257},
                                                                        {31, 129, 513},
                                                                        {64, 512, 384},
                                                                        {300, 40, 1100}}));  // n >= 256: 1024-row panels
    const ElemType wt      = GENERATE(ElemType::F32, ElemType::F16, ElemType::BF16);
    const bool     bias_on = GENERATE(false, true);
    const int      threads = GENERATE(1, 2);
    const int64_t  panel   = GENERATE(int64_t(0), int64_t(7));  // the measured default and a tiny panel (many tails)
    CAPTURE(n, k, m, test::elem_name(wt), bias_on, threads, panel);
    const auto               w    = make_stored(wt, m, k, 11);
    const auto               bias = make_stored(wt, 1, m, 12);
    const std::vector<float> x    = random_floats(size_t(n * k), 13);
    std::vector<float>       y(size_t(n * m), -7.0f), yr(size_t(n * m));
    ThreadPool               pool(threads);
    const ConstMat           bm = bias_on ? bias.mat() : ConstMat{};
    matmul(cmatf(x, n, k), w.mat(), bm, matf(y, n, m), pool, panel);
    ref::matmul(cmatf(x, n, k), w.mat(), bm, matf(yr, n, m));
    // Each output sums k products of values in [-1, 1] in fp32 (sgemm, blocked) against an fp64 reference on the same
    // stored weights. Random-sign roundings grow like sqrt(k) over partial sums of size ~sqrt(k), so ~k * u; 4x margin.
    CHECK(all_close("matmul", y, yr, 4.0 * kU32 * double(k + 1), 1e-6));
}

TEST_CASE("optimised matmul writes only its columns of a strided output", "[kernels][matmul]") {
    // y is a column slice [n, m] of a wider buffer (ld = m + 5): the padding must stay untouched.
    const int64_t      n = 5, k = 19, m = 11, ld = m + 5;
    const auto         w = make_stored(ElemType::BF16, m, k, 3);
    const auto         x = random_floats(size_t(n * k), 4);
    std::vector<float> y(size_t(n * ld), 42.0f), yr(size_t(n * m));
    ThreadPool         pool(2);
    matmul(cmatf(x, n, k), w.mat(), ConstMat{}, MatF{y.data(), n, m, ld}, pool, 4);
    ref::matmul(cmatf(x, n, k), w.mat(), ConstMat{}, matf(yr, n, m));
    for (int64_t i = 0; i < n; ++i) {
        CHECK(all_close("matmul_strided_row", y.data() + i * ld, yr.data() + i * m, size_t(m), 4.0 * kU32 * k, 1e-6));
        for (int64_t c = m; c < ld; ++c) CHECK(y[size_t(i * ld + c)] == 42.0f);
    }
}

TEST_CASE("embed widens the table rows", "[kernels][embed]") {
    const ElemType             t     = GENERATE(ElemType::F32, ElemType::F16, ElemType::BF16);
    const int64_t              d     = GENERATE(int64_t(1), int64_t(13), int64_t(64));
    const auto                 table = make_stored(t, 50, d, 5);
    const std::vector<int32_t> ids   = {0, 49, 7, 7, 23};
    std::vector<float>         out(ids.size() * size_t(d)), outr(out.size());
    embed(table.mat(), ids.data(), matf(out, int64_t(ids.size()), d));
    ref::embed(table.mat(), ids.data(), matf(outr, int64_t(ids.size()), d));
    CHECK(out == outr);  // widening is exact: bit equality
    for (size_t i = 0; i < ids.size(); ++i)
        for (int64_t c = 0; c < d; ++c) REQUIRE(out[i * size_t(d) + size_t(c)] == table.exact[size_t(ids[i] * d + c)]);
}

TEST_CASE("optimised rms_norm equals the reference", "[kernels][rms_norm]") {
    const auto [n, d] = GENERATE(table<int64_t, int64_t>({{0, 8}, {1, 1}, {3, 17}, {7, 4096}, {33, 130}}));
    const ElemType wt = GENERATE(ElemType::F32, ElemType::BF16);
    CAPTURE(n, d, test::elem_name(wt));
    const auto         w = make_stored(wt, 1, d, 21);
    std::vector<float> x = random_floats(size_t(n * d), 22, -3.0f, 3.0f), y(x.size()), yr(x.size());
    ThreadPool         pool(2);
    rms_norm(cmatf(x, n, d), w.mat(), 1e-5f, matf(y, n, d), pool);
    ref::rms_norm(cmatf(x, n, d), w.mat(), 1e-5f, matf(yr, n, d));
    // fp32 sum of squares over d terms (relative error ~ d * u at worst, typically sqrt(d) * u), then 3 roundings.
    CHECK(all_close("rms_norm", y, yr, 1e-6, (4.0 * std::sqrt(double(d)) + 8.0) * kU32));
    // In place (y aliases x) gives the same result.
    rms_norm(cmatf(x, n, d), w.mat(), 1e-5f, matf(x, n, d), pool);
    CHECK(x == y);
}

TEST_CASE("reference rms_norm of a constant row is the weight", "[kernels][ref]") {
    std::vector<float> x(8, -2.0f), w = random_floats(8, 1), y(8);
    ref::rms_norm(cmatf(x, 1, 8), ConstMat{w.data(), ElemType::F32, 1, 8, 8}, 0.0f, matf(y, 1, 8));
    for (int c = 0; c < 8; ++c) CHECK(y[size_t(c)] == Approx(-w[size_t(c)]).epsilon(1e-6));
}

TEST_CASE("optimised rope equals the reference", "[kernels][rope]") {
    const auto [n, n_head, head_dim] =
        GENERATE(table<int64_t, int, int>({{0, 2, 8}, {1, 1, 2}, {5, 3, 6}, {9, 32, 128}}));
    const float theta = GENERATE(10000.0f, 500000.0f);
    CAPTURE(n, n_head, head_dim, theta);
    const int64_t        w = int64_t(n_head) * head_dim;
    std::vector<float>   x = random_floats(size_t(n * w), 31), xr = x;
    std::vector<int32_t> pos(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = int32_t((i * 37) % 4096);
    ThreadPool pool(2);
    rope(matf(x, n, w), pos.data(), n_head, head_dim, theta, pool);
    ref::rope(matf(xr, n, w), pos.data(), n_head, head_dim, theta);
    // Same fp32 angles and cos/sin; the rotation may differ by an FMA contraction: 2 ulps of values in [-1.5, 1.5].
    CHECK(all_close("rope", x, xr, 4.0 * kU32, 4.0 * kU32));
}

TEST_CASE("optimised rope: positions outside its table (negative, >= 2^20) and after the table grew",
          "[kernels][rope]") {
    const int  n_head = 2, head_dim = 8, w = n_head * head_dim;
    const auto pos = GENERATE(std::vector<int32_t>{-5, 0, 3}, std::vector<int32_t>{7, 1 << 21},
                              std::vector<int32_t>{9000, 2, 70000});  // 70000: the table doubles past it
    CAPTURE(pos);
    const int64_t      n = int64_t(pos.size());
    std::vector<float> x = random_floats(size_t(n * w), 32), xr = x;
    ThreadPool         pool(2);
    rope(matf(x, n, w), pos.data(), n_head, head_dim, 10000.0f, pool);
    ref::rope(matf(xr, n, w), pos.data(), n_head, head_dim, 10000.0f);
    CHECK(all_close("rope", x, xr, 4.0 * kU32, 4.0 * kU32));  // as above
}

TEST_CASE("reference rope: position 0 is the identity, rotations keep pair norms", "[kernels][ref]") {
    const int          H = 2, D = 8;
    std::vector<float> x = random_floats(2 * H * D, 3), y = x;
    const int32_t      pos[2] = {0, 1234};
    ref::rope(matf(y, 2, H * D), pos, H, D, 10000.0f);
    for (int c = 0; c < H * D; ++c) CHECK(y[size_t(c)] == x[size_t(c)]);
    for (int h = 0; h < H; ++h)
        for (int c = 0; c < D / 2; ++c) {
            const size_t i1 = size_t(H * D + h * D + c), i2 = i1 + D / 2;
            CHECK(std::hypot(y[i1], y[i2]) == Approx(std::hypot(x[i1], x[i2])).epsilon(1e-6));
        }
    // Pair 0 rotates by exactly the position (inv_freq 1): cos(1234) on the first component when x2 = 0.
    std::vector<float> e(size_t(D), 0.0f);
    e[0]             = 1.0f;
    const int32_t p1 = 1234;
    ref::rope(matf(e, 1, D), &p1, 1, D, 10000.0f);
    CHECK(e[0] == Approx(std::cos(1234.0)).margin(1e-4));  // fp32 angle 1234 is exact; cosf within 1e-4 of fp64
    CHECK(e[D / 2] == Approx(std::sin(1234.0)).margin(1e-4));
}

TEST_CASE("optimised add, sub, silu_mul equal the reference", "[kernels][elementwise]") {
    const auto [n, w] = GENERATE(table<int64_t, int64_t>({{0, 4}, {1, 1}, {3, 17}, {16, 1000}}));
    CAPTURE(n, w);
    const auto a = random_floats(size_t(n * w), 41, -8.0f, 8.0f), b = random_floats(size_t(n * w), 42, -8.0f, 8.0f);
    std::vector<float> y(a.size()), yr(a.size());
    add(cmatf(a, n, w), cmatf(b, n, w), matf(y, n, w));
    ref::add(cmatf(a, n, w), cmatf(b, n, w), matf(yr, n, w));
    CHECK(y == yr);  // one fp32 rounding in both
    sub(cmatf(a, n, w), cmatf(b, n, w), matf(y, n, w));
    ref::sub(cmatf(a, n, w), cmatf(b, n, w), matf(yr, n, w));
    CHECK(y == yr);
    ThreadPool pool(2);
    silu_mul(cmatf(a, n, w), cmatf(b, n, w), matf(y, n, w), pool);
    ref::silu_mul(cmatf(a, n, w), cmatf(b, n, w), matf(yr, n, w));
    // fp32 silu (expf ~1 ulp, a division, a product) against fp64: a few ulps relative, plus a tiny atol near 0.
    CHECK(all_close("silu_mul", y, yr, 1e-7, 8.0 * kU32));
    // y aliases gate.
    std::vector<float> g = a;
    silu_mul(cmatf(g, n, w), cmatf(b, n, w), matf(g, n, w), pool);
    CHECK(g == y);
}

// The norm, RoPE and the residual adds split over a pool (by rows, by heads) compute every element as on one thread:
// the same bits at 1 and 2 threads, split or not. 300 x 1024 is above the pool's cold bound (kMinSplitWork), so the
// 2-thread calls split whether or not the workers are still polling; 160 x 128 splits its norm and RoPE only while
// they poll (kMinSplitWorkWarm), and 1 x 16 never.
TEST_CASE("rms_norm, rope, add and sub split over a pool give one thread's bits", "[kernels][threads]") {
    const auto [n, n_head, head_dim] = GENERATE(table<int64_t, int, int>({{300, 8, 128}, {160, 4, 32}, {1, 2, 8}}));
    CAPTURE(n, n_head, head_dim);
    const int64_t        d = int64_t(n_head) * head_dim;
    ThreadPool           one(1), two(2);
    const auto           w = make_stored(ElemType::F32, 1, d, 61);
    const auto           a = random_floats(size_t(n * d), 62, -4.0f, 4.0f), b = random_floats(size_t(n * d), 63);
    std::vector<int32_t> pos(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = int32_t((i * 13) % 700);
    for (int round = 0; round < 3; ++round) {  // the first call may find the workers asleep, later ones polling
        std::vector<float> y1(a.size()), y2(a.size());
        rms_norm(cmatf(a, n, d), w.mat(), 1e-5f, matf(y1, n, d), one);
        rms_norm(cmatf(a, n, d), w.mat(), 1e-5f, matf(y2, n, d), two);
        CHECK(y1 == y2);
        std::vector<float> r1 = a, r2 = a;
        rope(matf(r1, n, d), pos.data(), n_head, head_dim, 10000.0f, one);
        rope(matf(r2, n, d), pos.data(), n_head, head_dim, 10000.0f, two);
        CHECK(r1 == r2);
        add(cmatf(a, n, d), cmatf(b, n, d), matf(y1, n, d), one);
        add(cmatf(a, n, d), cmatf(b, n, d), matf(y2, n, d), two);
        CHECK(y1 == y2);
        sub(cmatf(a, n, d), cmatf(b, n, d), matf(y1, n, d), one);
        sub(cmatf(a, n, d), cmatf(b, n, d), matf(y2, n, d), two);
        CHECK(y1 == y2);
    }
}

TEST_CASE("optimised cosine equals the reference, norms clamped at 1e-8", "[kernels][cosine]") {
    const auto [n, w] = GENERATE(table<int64_t, int64_t>({{0, 3}, {1, 1}, {5, 31}, {12, 4096}}));
    CAPTURE(n, w);
    const auto         a = random_floats(size_t(n * w), 51);
    auto               b = random_floats(size_t(n * w), 52);
    std::vector<float> c(static_cast<size_t>(n)), cr(static_cast<size_t>(n));
    cosine_rows(cmatf(a, n, w), cmatf(b, n, w), c.data());
    ref::cosine_rows(cmatf(a, n, w), cmatf(b, n, w), cr.data());
    // fp32 sums of w products (16 lanes) against fp64: ~sqrt(w) * u relative on each statistic; cos is in [-1, 1].
    CHECK(all_close("cosine", c, cr, 8.0 * std::sqrt(double(w)) * kU32, 0.0));
    // Identical rows give 1; a zero row gives 0 (clamped norm, not NaN).
    if (n > 0) {
        cosine_rows(cmatf(a, n, w), cmatf(a, n, w), c.data());
        for (float x : c) CHECK(x == Approx(1.0f).epsilon(1e-5));
        std::vector<float> z(size_t(n * w), 0.0f);
        cosine_rows(cmatf(a, n, w), cmatf(z, n, w), c.data());
        for (float x : c) CHECK(x == 0.0f);
    }
}

TEST_CASE("reference cosine clamps tiny norms at 1e-8 (kernels/README.md §f.7)", "[kernels][ref]") {
    // |a|^2 = |b|^2 = 1e-10 < 1e-8: cos = 1e-10 / 1e-8 = 0.01, not 1.
    std::vector<float> a = {1e-5f}, b = {1e-5f};
    float              c = 0;
    ref::cosine_rows(cmatf(a, 1, 1), cmatf(b, 1, 1), &c);
    CHECK(c == Approx(0.01f).epsilon(1e-4));
    cosine_rows(cmatf(a, 1, 1), cmatf(b, 1, 1), &c);
    CHECK(c == Approx(0.01f).epsilon(1e-4));
}

TEST_CASE("optimised score_logits equals the reference", "[kernels][score]") {
    const auto [n, v]    = GENERATE(table<int64_t, int64_t>({{0, 10}, {1, 1}, {3, 17}, {9, 5000}, {2, 126464}}));
    const ScoreRule rule = GENERATE(ScoreRule::Confidence, ScoreRule::NegEntropy);
    const bool      ban  = GENERATE(false, true);
    CAPTURE(n, v, int(rule), ban);
    const auto           logits = random_floats(size_t(n * v), 61, -5.0f, 5.0f);
    std::vector<int32_t> banned;
    if (ban && v > 1 && n > 0) {
        // Ban the true argmax of row 0 and a few others: the second best must win.
        int64_t best = 0;
        for (int64_t j = 1; j < v; ++j)
            if (logits[size_t(j)] > logits[size_t(best)]) best = j;
        banned = {int32_t(best), 0, int32_t(v - 1)};
    }
    std::vector<int32_t> tok(static_cast<size_t>(n)), tokr(static_cast<size_t>(n));
    std::vector<float>   sc(static_cast<size_t>(n)), scr(static_cast<size_t>(n));
    ThreadPool           pool(2);
    score_logits(cmatf(logits, n, v), rule, banned.data(), int64_t(banned.size()), tok.data(), sc.data(), pool);
    ref::score_logits(cmatf(logits, n, v), rule, banned.data(), int64_t(banned.size()), tokr.data(), scr.data());
    CHECK(tok == tokr);
    for (int32_t t : tok)
        for (int32_t bnd : banned) CHECK(t != bnd);
    // fp32 exp per element (~1 ulp), sums in fp64: a few ulps relative on the score.
    CHECK(all_close("score_logits", sc, scr, 1e-7, 16.0 * kU32));
}

TEST_CASE("score_logits: lowest id on ties, probabilities and entropy by hand, all banned", "[kernels][score]") {
    ThreadPool pool(2);
    // Row: [1, 3, 3, 0] -> argmax 1 (tie with 2), p = e^3 / (e + 2 e^3 + 1).
    const std::vector<float> l  = {1, 3, 3, 0};
    const double             z  = std::exp(1.0) + 2 * std::exp(3.0) + 1.0;
    int32_t                  t  = -5;
    float                    s  = 0;
    int32_t                  tr = -5;
    float                    sr = 0;
    score_logits(cmatf(l, 1, 4), ScoreRule::Confidence, nullptr, 0, &t, &s, pool);
    ref::score_logits(cmatf(l, 1, 4), ScoreRule::Confidence, nullptr, 0, &tr, &sr);
    CHECK(t == 1);
    CHECK(tr == 1);
    CHECK(s == Approx(std::exp(3.0) / z).epsilon(1e-6));
    CHECK(sr == Approx(std::exp(3.0) / z).epsilon(1e-6));
    double h = 0;
    for (float x : l) {
        const double p = std::exp(double(x)) / z;
        h += p * std::log(p + 1e-10);
    }
    score_logits(cmatf(l, 1, 4), ScoreRule::NegEntropy, nullptr, 0, &t, &s, pool);
    ref::score_logits(cmatf(l, 1, 4), ScoreRule::NegEntropy, nullptr, 0, &tr, &sr);
    CHECK(s == Approx(h).epsilon(1e-6));
    CHECK(sr == Approx(h).epsilon(1e-6));
    // Banning id 1 moves the tie to id 2; the softmax still runs over every id, id 1 included
    // (engine/README.md decision 11), so the confidence is p(2) of the full distribution, not renormalised without
    // id 1.
    const int32_t ban1 = 1;
    score_logits(cmatf(l, 1, 4), ScoreRule::Confidence, &ban1, 1, &t, &s, pool);
    ref::score_logits(cmatf(l, 1, 4), ScoreRule::Confidence, &ban1, 1, &tr, &sr);
    CHECK(t == 2);
    CHECK(tr == 2);
    CHECK(s == Approx(std::exp(3.0) / z).epsilon(1e-6));
    CHECK(sr == Approx(std::exp(3.0) / z).epsilon(1e-6));
    // A banned id that holds the maximum: the argmax skips it, the normaliser keeps it.
    const std::vector<float> lm = {0.f, 5.f, 1.f, 2.f};
    const double             zm = std::exp(0.0) + std::exp(5.0) + std::exp(1.0) + std::exp(2.0);
    score_logits(cmatf(lm, 1, 4), ScoreRule::Confidence, &ban1, 1, &t, &s, pool);
    ref::score_logits(cmatf(lm, 1, 4), ScoreRule::Confidence, &ban1, 1, &tr, &sr);
    CHECK(t == 3);
    CHECK(tr == 3);
    CHECK(s == Approx(std::exp(2.0) / zm).epsilon(1e-6));
    CHECK(sr == Approx(std::exp(2.0) / zm).epsilon(1e-6));
    // Every id banned: token -1, score -inf.
    const int32_t all[4] = {0, 1, 2, 3};
    score_logits(cmatf(l, 1, 4), ScoreRule::Confidence, all, 4, &t, &s, pool);
    ref::score_logits(cmatf(l, 1, 4), ScoreRule::Confidence, all, 4, &tr, &sr);
    CHECK(t == -1);
    CHECK(tr == -1);
    CHECK(std::isinf(s));
    CHECK(s < 0);
    CHECK(std::isinf(sr));
}

TEST_CASE("gather and scatter rows equal the reference, with type conversion", "[kernels][rows]") {
    const ElemType st = GENERATE(ElemType::F32, ElemType::BF16, ElemType::F16);
    const ElemType dt = GENERATE(ElemType::F32, ElemType::BF16);
    const int64_t  w  = GENERATE(int64_t(1), int64_t(9), int64_t(128));
    CAPTURE(test::elem_name(st), test::elem_name(dt), w);
    const auto                 src = make_stored(st, 20, w, 71);
    const std::vector<int32_t> idx = {19, 0, 5, 5, 12};
    for (const std::vector<int32_t>& ix : {idx, std::vector<int32_t>{}}) {
        const int64_t         n = int64_t(ix.size());
        std::vector<uint32_t> d(size_t(n * w) + 1, 0u), dr(size_t(n * w) + 1, 0u);  // 4-byte slots fit any type
        gather_rows(src.mat(), ix.data(), n, d.data(), dt, w);
        ref::gather_rows(src.mat(), ix.data(), n, dr.data(), dt, w);
        CHECK(d == dr);  // same conversion functions: bit equality
    }
    // Scatter the first 3 source rows to distinct destination rows of a 30-row matrix.
    const int32_t         sidx[3] = {29, 3, 17};
    std::vector<uint32_t> d(size_t(30 * w), 0u), dr(size_t(30 * w), 0u);
    scatter_rows(src.mat(), sidx, 3, d.data(), dt, w);
    ref::scatter_rows(src.mat(), sidx, 3, dr.data(), dt, w);
    CHECK(d == dr);
    if (st == ElemType::F32 && dt == ElemType::F32) {
        const float* df = reinterpret_cast<const float*>(d.data());
        for (int64_t c = 0; c < w; ++c) CHECK(df[29 * w + c] == src.exact[size_t(c)]);
    }
}

TEST_CASE("convert_row round trips through every type pair", "[kernels][convert]") {
    const auto         x = random_floats(37, 81, -100.0f, 100.0f);
    std::vector<float> back(x.size());
    for (ElemType t : {ElemType::F32, ElemType::F16, ElemType::BF16}) {
        std::vector<uint32_t> buf(x.size(), 0u);
        convert_row(x.data(), ElemType::F32, buf.data(), t, int64_t(x.size()));
        convert_row(buf.data(), t, back.data(), ElemType::F32, int64_t(x.size()));
        for (size_t i = 0; i < x.size(); ++i) {
            const float expect = t == ElemType::F32   ? x[i]
                                 : t == ElemType::F16 ? f16_to_f32(f32_to_f16(x[i]))
                                                      : round_to_bf16(x[i]);
            REQUIRE(back[i] == expect);
        }
    }
    // F16 -> BF16 goes through fp32 with one rounding.
    std::vector<uint16_t> h(x.size()), bf(x.size());
    convert_row(x.data(), ElemType::F32, h.data(), ElemType::F16, int64_t(x.size()));
    convert_row(h.data(), ElemType::F16, bf.data(), ElemType::BF16, int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) REQUIRE(bf[i] == f32_to_bf16(f16_to_f32(h[i])));
}

TEST_CASE("vectorised exp for softmax arguments is within a few ulp of exp", "[kernels][simd]") {
    // simd::exp_nonpos feeds the attention softmax: x = s - max <= 0. Checked over [-87, 0] against fp64 exp; below
    // the clamp (-87.3) it must stay a tiny positive number (it only adds to a sum that is >= 1).
    float  xs[16];
    double worst = 0.0;
    for (int i = 0; i <= 200000; ++i) {
        const float x = -87.0f * float(i) / 200000.0f;
        xs[i % 16]    = x;
        if (i % 16 != 15) continue;
        const simd::V16 e = simd::exp_nonpos(simd::load16(xs));
        for (int l = 0; l < 16; ++l) {
            const double ref = std::exp(double(xs[l]));
            worst            = std::max(worst, std::fabs(double(e[l]) - ref) / ref);
        }
    }
    CHECK(worst < 4.0 * 2.0 * kU32);  // 4 ulp (ulp = 2 u at the top of a binade)
    float low[16];
    for (int l = 0; l < 16; ++l) low[l] = -88.0f - 10.0f * float(l);
    const simd::V16 e = simd::exp_nonpos(simd::load16(low));
    for (int l = 0; l < 16; ++l) {
        CHECK(e[l] >= 0.0f);
        CHECK(e[l] < 2e-38f);
    }
    const float     zeros[16] = {};
    const simd::V16 one       = simd::exp_nonpos(simd::load16(zeros));
    for (int l = 0; l < 16; ++l) CHECK(one[l] == 1.0f);
}

TEST_CASE("vectorised exp scales by 2^n through the exponent bits with the bits of a multiply", "[kernels][simd]") {
    // exp_nonpos_n adds n to p's exponent field instead of multiplying by 2^n; that is exact only while p * 2^n is a
    // normal number. Checked against the multiply on every float of [-87.5, -86.5] (the clamp and the only n = -126
    // inputs), on every 61st float of [-90, 0] (60 samples per power-of-two spacing from 2^-126 up), at 0, -0, -inf
    // and NaN (which must stay NaN).
    const auto check = [](const float* xs) {
        const simd::V16            xv  = simd::load16(xs);
        const simd::V16            e   = simd::exp_nonpos(xv);
        const simd::ExpReduced<16> red = simd::exp_nonpos_reduced<16>(xv);
        const simd::Lanes<16>::I   sb  = (red.n + 127) << 23;
        simd::V16                  scale;
        std::memcpy(&scale, &sb, sizeof scale);
        const simd::V16 ref = red.p * scale;
        int             bad = 0;
        for (int l = 0; l < 16; ++l)
            bad += std::bit_cast<uint32_t>(float(e[l])) != std::bit_cast<uint32_t>(float(ref[l]));
        return bad;
    };
    float      xs[16];
    int        fill = 0, mismatches = 0;
    int64_t    checked = 0;
    const auto push    = [&](float x) {
        xs[fill++] = x;
        if (fill == 16) {
            mismatches += check(xs);
            checked += 16;
            fill = 0;
        }
    };
    const auto bits_of  = [](float x) { return std::bit_cast<uint32_t>(x); };
    const auto float_of = [](uint32_t b) { return std::bit_cast<float>(b); };
    for (uint32_t b = bits_of(-86.5f); b <= bits_of(-87.5f); ++b) push(float_of(b));  // negative: bits grow with |x|
    for (uint32_t b = bits_of(-0.0f); b <= bits_of(-90.0f); b += 61) push(float_of(b));
    for (float x : {0.0f, -0.0f, -INFINITY}) push(x);
    while (fill != 0) push(-1.0f);
    CHECK(checked > 18000000);
    CHECK(mismatches == 0);
    float nans[16];
    for (float& x : nans) x = std::numeric_limits<float>::quiet_NaN();
    const simd::V16 en = simd::exp_nonpos(simd::load16(nans));
    for (int l = 0; l < 16; ++l) CHECK(std::isnan(en[l]));
}

TEST_CASE("HugePageBuffer: zeroed, aligned to 2 MiB from one huge page up, movable", "[kernels][memory]") {
    HugePageBuffer empty(0);
    CHECK(empty.data() == nullptr);
    CHECK(empty.size() == 0);
    const size_t size = GENERATE(size_t(100), size_t(1) << 20, (size_t(5) << 20) + 12345);
    INFO("size " << size);
    HugePageBuffer b(size);
    REQUIRE(b.data() != nullptr);
    CHECK(b.size() == size);
    const uintptr_t align = size >= HugePageBuffer::kHugePage ? HugePageBuffer::kHugePage : 4096;
    CHECK(reinterpret_cast<uintptr_t>(b.data()) % align == 0);
    size_t nonzero = 0;
    for (size_t i = 0; i < size; ++i) nonzero += b.data()[i] != 0;
    CHECK(nonzero == 0);
    b.data()[0] = 1, b.data()[size - 1] = 2;  // the whole requested range is writable
    b.warm(0, size);
    char*          p = b.data();
    HugePageBuffer moved(std::move(b));
    CHECK(moved.data() == p);
    CHECK(moved.size() == size);
    CHECK(b.data() == nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
    HugePageBuffer assigned;
    assigned = std::move(moved);
    CHECK(assigned.data() == p);
    CHECK(assigned.data()[size - 1] == 2);
}
