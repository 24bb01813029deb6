// The packed GEMM provider (kernels/cpu/packed_gemm.h) against the fp64 reference matmul, the threads it may use,
// and a bf16 checkpoint (packed bf16 GEMMs) against the same weights in fp32 (the exact fp32 path) on a wide shape.
// Skipped (exit 77) in a build without a provider (no libdnnl-dev).
#include "tests/support/skippable_main.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/io/checkpoint.h"
#include "kernels/common/dtype_convert.h"
#include "kernels/cpu/packed_gemm.h"
#include "kernels/cpu/ref/matmul.h"
#include "kernels/cpu/small_gemm.h"
#include "support/pool_stall.h"
#include "support/tiny_models.h"

using namespace dyllm;
using namespace dyllm::cpu;

namespace {

std::vector<float> normals(size_t n, uint32_t seed, float std) {
    std::mt19937                    rng(seed);
    std::normal_distribution<float> nd(0.0f, std);
    std::vector<float>              v(n);
    for (float& f : v) f = nd(rng);
    return v;
}

// Threads of this process, from /proc (the pool's workers, OpenBLAS's, and any an OpenMP runtime started).
int process_threads() {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) n += e.is_directory() ? 1 : 0;
    return n;
}

// sum_l |x[l] w[j, l]| over l < k: the magnitude that scales an fp32 dot product's rounding bound (Higham §3.1).
double abs_dot(const float* x, const ConstMat& w, int64_t j, int64_t k) {
    double mag = 0;
    for (int64_t l = 0; l < k; ++l) mag += std::fabs(double(x[l]) * double(w.at(j, l)));
    return mag;
}

struct Case {
    int64_t n, m, k;
};

// A random fp32 weight [m, k] (entries N(0, std^2) from `seed`) packed on `pool`; the packing must succeed.
struct PackedNormals {
    std::vector<float>                  values;
    ConstMat                            w;
    std::shared_ptr<const PackedWeight> packed;
};
PackedNormals pack_normals(const PackedGemm& gemm, ThreadPool& pool, int64_t m, int64_t k, uint32_t seed, float std) {
    PackedNormals p;
    p.values = normals(size_t(m * k), seed, std);
    p.w      = ConstMat{p.values.data(), ElemType::F32, m, k, k};
    std::string err;
    p.packed = gemm.pack(p.w, pool, &err);
    INFO(err);
    REQUIRE(p.packed);
    return p;
}

// One product's inputs: a pool and provider of `threads` threads, random rows x [n, k] (N(0, 1), from `seed`) and a
// packed weight [m, k] (N(0, 0.05^2), from seed + 1).
struct PackedProduct {
    ThreadPool         pool;
    PackedGemm         gemm;
    std::vector<float> xv;
    PackedNormals      packed;
    PackedProduct(int threads, int64_t n, int64_t m, int64_t k, uint32_t seed)
        : pool(threads),
          gemm(threads),
          xv(normals(size_t(n * k), seed, 1.0f)),
          packed(pack_normals(gemm, pool, m, k, seed + 1, 0.05f)) {}
};

// oneDNN 2.6 has a bf16 matmul on AVX-512 CPUs only: elsewhere the backend keeps bf16 weights unpacked (matmul.h, the
// last test case) and there is no packed bf16 product to test.
bool packs(ElemType type) {
    if (PackedGemm::supports(type)) return true;
    WARN("this CPU has no oneDNN bf16 matmul: the packed bf16 cases are not run here");
    return false;
}

}  // namespace

TEST_CASE("packed matmul equals the fp64 reference within fp32 (F32) or bf16-input (BF16) rounding", "[packed]") {
    const ElemType type    = GENERATE(ElemType::F32, ElemType::BF16);
    const int      threads = GENERATE(1, 2);
    // Rows 1, odd, between multiples of 16 and above one slice; widths below and above kPackedSliceMinCols, odd k;
    // 261 rows: above the exact-row primitives (padded to 272), with a packed copy over one 2 MiB huge page. A weight
    // under kPackedWholeBelowRows rows is packed whole and split by rows of x at 2 threads: 100 rows (two chunks of 50,
    // padded to 64 on first sight), 64 rows (two exact chunks of 32). Up to kSmallGemmMaxRows (8) rows a weight of
    // <= 1 MiB in fp32 takes small_gemm (k-major copy): 1-8 rows, outputs a multiple of 32, of 16 only (tile of one
    // vector), with a partial vector (344, 374, 20, 1), sliced at 2 threads (1000 x 64), split over 2 threads when
    // >= 1 MFLOP (8 x 1000 x 64); 9 rows and more go to oneDNN, and so does a weight over 1 MiB (1030 x 600).
    // small_gemm itself takes any row count in 8-row tiles: the next test case.
    const Case c =
        GENERATE(Case{1, 128, 128}, Case{7, 300, 77}, Case{17, 1000, 256}, Case{33, 513, 129}, Case{100, 2048, 64},
                 Case{3, 1, 5}, Case{261, 1030, 600}, Case{100, 300, 77}, Case{64, 200, 130}, Case{8, 344, 128},
                 Case{5, 374, 40}, Case{2, 20, 3}, Case{4, 16, 9}, Case{6, 511, 64}, Case{9, 300, 77},
                 Case{1, 1000, 64}, Case{5, 1030, 600}, Case{8, 1000, 64}, Case{32, 344, 128});
    INFO("type " << (type == ElemType::F32 ? "F32" : "BF16") << ", threads " << threads << ", n " << c.n << ", m "
                 << c.m << ", k " << c.k);
    if (!packs(type)) return;
    ThreadPool pool(threads);
    PackedGemm gemm(threads);

    // W stored with a row stride ld > k (a view into a wider tensor), x with ld > k, y a column slice of a wider
    // output: the strides the engine passes.
    const int64_t         wld = c.k + 3, xld = c.k + 5, yld = c.m + 7;
    std::vector<float>    wv = normals(size_t(c.m * wld), 1, 0.05f), xv = normals(size_t(c.n * xld), 2, 1.0f);
    std::vector<float>    bias = normals(size_t(c.m), 3, 0.1f);
    std::vector<uint16_t> wb(wv.size());
    for (size_t i = 0; i < wv.size(); ++i) wb[i] = f32_to_bf16(wv[i]);
    const ConstMat w =
        type == ElemType::F32 ? ConstMat{wv.data(), type, c.m, c.k, wld} : ConstMat{wb.data(), type, c.m, c.k, wld};
    std::string err;
    const auto  pw = gemm.pack(w, pool, &err);
    REQUIRE(pw);
    CHECK(pw->rows() == c.m);
    CHECK(pw->cols() == c.k);
    CHECK(pw->type() == type);
    // Packing copies the weight into the provider's layout: no more than the stored bytes plus block padding.
    CHECK(pw->bytes() >= size_t(c.m * c.k) * elem_size(type));

    std::vector<float> y(size_t(c.n * yld), -7.0f);
    const ConstMat     bm{bias.data(), ElemType::F32, 1, c.m, c.m};
    gemm.matmul(CMatF{xv.data(), c.n, c.k, xld}, *pw, bm, MatF{y.data() + 3, c.n, c.m, yld}, pool);

    // The reference multiplies x as the GEMM sees it: rounded to bf16 for BF16 weights (the documented input rounding),
    // so both paths differ only by summation order. Bound: |got - ref| <= (k + 2) u sum_i |x_i w_i| + u |b|, u = 2^-24
    // (fp32 accumulation of k exact products, Higham §3.1; products of two bf16 or one fp32 FMA are exact or within
    // u), plus 1e-30 for exact zeros.
    std::vector<float> xr(xv);
    if (type == ElemType::BF16)
        for (float& f : xr) f = round_to_bf16(f);
    std::vector<float> ref(size_t(c.n * c.m));
    ref::matmul(CMatF{xr.data(), c.n, c.k, xld}, w, bm, MatF{ref.data(), c.n, c.m, c.m});
    const double u   = std::ldexp(1.0, -24);
    int          bad = 0;
    for (int64_t i = 0; i < c.n; ++i) {
        CHECK(y[size_t(i * yld + 2)] == -7.0f);  // the columns beside the slice are untouched
        if (c.m + 3 < yld) CHECK(y[size_t(i * yld + 3 + c.m)] == -7.0f);
        for (int64_t j = 0; j < c.m; ++j) {
            const double mag = abs_dot(xr.data() + i * xld, w, j, c.k);
            const double tol = double(c.k + 2) * u * mag + u * std::fabs(bias[size_t(j)]) + 1e-30;
            const double got = y[size_t(i * yld + 3 + j)], want = ref[size_t(i * c.m + j)];
            if (std::fabs(got - want) > tol && bad++ < 5)
                FAIL_CHECK("y[" << i << ", " << j << "] = " << got << ", reference " << want << ", tol " << tol);
        }
    }
    CHECK(bad == 0);
}

TEST_CASE("small_gemm equals the fp64 reference for any row count, in row tiles", "[packed][small]") {
    const ElemType type = GENERATE(ElemType::F32, ElemType::BF16);
    // Rows: one tile partly and fully used, a full tile plus one or two rows, several tiles with a partial last one;
    // outputs below one vector, with a partial vector, a multiple of 32; k from 1. One row takes tiles of 8 output
    // vectors, two to four rows tiles of 4, then narrower ones for the rest: 374 and 344 outputs reach every width.
    // Without AVX-512, more than 6 rows split evenly into tiles of at most 6 (7: 3 + 4; 32: 6, 6, 5, 5, 5, 5), run in
    // blocks of 8 tiles over 16-output strips, then whole-weight tiles for the outputs past the last whole strip (20,
    // 344 and 8 outputs: 4, 8 and all of them); 101 rows take three blocks.
    const Case c = GENERATE(Case{1, 5, 1}, Case{1, 374, 128}, Case{2, 344, 64}, Case{4, 374, 12}, Case{7, 20, 3},
                            Case{8, 344, 128}, Case{9, 374, 40}, Case{10, 130, 9}, Case{17, 64, 33}, Case{33, 48, 16},
                            Case{101, 344, 24}, Case{12, 8, 5}, Case{32, 344, 17});
    INFO("type " << (type == ElemType::F32 ? "F32" : "BF16") << ", n " << c.n << ", m " << c.m << ", k " << c.k);
    const int64_t         xld = c.k + 2, yld = c.m + 3;
    std::vector<float>    wv = normals(size_t(c.m * c.k), 6, 0.05f), xv = normals(size_t(c.n * xld), 7, 1.0f);
    std::vector<float>    bias = normals(size_t(c.m), 8, 0.1f);
    std::vector<uint16_t> wb(wv.size());
    for (size_t i = 0; i < wv.size(); ++i) wb[i] = f32_to_bf16(wv[i]);
    const ConstMat w =
        type == ElemType::F32 ? ConstMat{wv.data(), type, c.m, c.k, c.k} : ConstMat{wb.data(), type, c.m, c.k, c.k};
    const KMajorWeight kw = make_kmajor(w);
    CHECK(kw.panel % 16 == 0);
    std::vector<float> y(size_t(c.n * yld), -7.0f);
    small_gemm(CMatF{xv.data(), c.n, c.k, xld}, kw, bias.data(), MatF{y.data(), c.n, c.m, yld});
    // Same bound as the packed products above: x rounded to bf16 for a BF16 weight, then fp32 accumulation of k
    // exact products in order: |got - ref| <= (k + 2) u sum |x w| + u |b|.
    std::vector<float> xr(xv);
    if (type == ElemType::BF16)
        for (float& f : xr) f = round_to_bf16(f);
    std::vector<float> ref(size_t(c.n * c.m));
    ref::matmul(CMatF{xr.data(), c.n, c.k, xld}, w, ConstMat{bias.data(), ElemType::F32, 1, c.m, c.m},
                MatF{ref.data(), c.n, c.m, c.m});
    const double u   = std::ldexp(1.0, -24);
    int          bad = 0;
    for (int64_t i = 0; i < c.n; ++i) {
        for (int64_t j = c.m; j < yld; ++j) CHECK(y[size_t(i * yld + j)] == -7.0f);  // past the row: untouched
        for (int64_t j = 0; j < c.m; ++j) {
            const double mag = abs_dot(xr.data() + i * xld, w, j, c.k);
            const double tol = double(c.k + 2) * u * mag + u * std::fabs(bias[size_t(j)]) + 1e-30;
            if (std::fabs(double(y[size_t(i * yld + j)]) - double(ref[size_t(i * c.m + j)])) > tol && bad++ < 5)
                FAIL_CHECK("y[" << i << ", " << j << "] = " << y[size_t(i * yld + j)] << ", reference "
                                << ref[size_t(i * c.m + j)]);
        }
    }
    CHECK(bad == 0);
}

TEST_CASE("few-row packed products equal small_gemm on its own k-major copy, bit for bit", "[packed][small]") {
    // PackedGemm runs products of <= kSmallGemmMaxRows rows of a small weight on small_gemm, reading an fp32 weight
    // straight from the packed copy where the provider lays it out in k-major panels (oneDNN's BA16a64b on
    // AVX-512), else from a copy of its own. The panels only move where each weight is read: every output must be
    // the same sum in the same order as on make_kmajor's copy. Shapes: whole and partial 64-output panels, k not a
    // multiple of 16, the model shapes; 1..8 rows (every register tile), with a bias. At 2 threads the weights of at
    // least kSmallSplitWeightBytes (all but 128 x 128, 40 x 100 and 16 x 7; 600 x 112 with a partial last panel) split
    // their outputs over the pool (kmajor_slice): each slice's outputs must still be exactly the whole product's.
    const ElemType type    = GENERATE(ElemType::F32, ElemType::BF16);
    const int      threads = GENERATE(1, 2);
    const Case     c       = GENERATE(Case{0, 128, 128}, Case{0, 344, 128}, Case{0, 128, 344}, Case{0, 374, 128},
                                      Case{0, 40, 100}, Case{0, 16, 7}, Case{0, 688, 256}, Case{0, 600, 112});
    INFO("type " << (type == ElemType::F32 ? "F32" : "BF16") << ", threads " << threads << ", m " << c.m << ", k "
                 << c.k);
    if (!packs(type)) return;
    ThreadPool            pool(threads);
    PackedGemm            gemm(threads);
    std::vector<float>    wv = normals(size_t(c.m * c.k), 16, 0.05f), bias = normals(size_t(c.m), 17, 0.1f);
    std::vector<uint16_t> wb(wv.size());
    for (size_t i = 0; i < wv.size(); ++i) wb[i] = f32_to_bf16(wv[i]);
    const ConstMat w =
        type == ElemType::F32 ? ConstMat{wv.data(), type, c.m, c.k, c.k} : ConstMat{wb.data(), type, c.m, c.k, c.k};
    std::string err;
    const auto  pw = gemm.pack(w, pool, &err);
    REQUIRE(pw);
    const KMajorWeight kw = make_kmajor(w);
    for (int64_t n = 1; n <= kSmallGemmMaxRows; ++n) {
        const std::vector<float> xv = normals(size_t(n * c.k), uint32_t(18 + n), 1.0f);
        std::vector<float>       got(size_t(n * c.m), -7.0f), want(size_t(n * c.m), -9.0f);
        const uint64_t           handoffs = thread_handoffs();
        gemm.matmul(CMatF{xv.data(), n, c.k, c.k}, *pw, ConstMat{bias.data(), ElemType::F32, 1, c.m, c.m},
                    MatF{got.data(), n, c.m, c.m}, pool);
        // Split exactly when the weight (or the work) is big enough to pay for the hand-out.
        const bool split = threads == 2 && (double(c.m * c.k) * 4.0 >= kSmallSplitWeightBytes ||
                                            2.0 * double(n * c.m * c.k) >= kPackedParallelFlops);
        CHECK(thread_handoffs() - handoffs == (split ? 1u : 0u));
        small_gemm(CMatF{xv.data(), n, c.k, c.k}, kw, bias.data(), MatF{want.data(), n, c.m, c.m});
        int differ = 0;
        for (size_t i = 0; i < got.size(); ++i) differ += got[i] != want[i];
        CAPTURE(n);
        CHECK(differ == 0);
    }
}

TEST_CASE("packed bf16 matmul stays within bf16 input rounding of the exact fp32 product", "[packed]") {
    // Against x in full fp32: rounding x to bf16 (RNE, relative 2^-9) moves each product by at most 2^-9 |x_i w_i|.
    ThreadPool pool(2);
    PackedGemm gemm(2);
    if (!packs(ElemType::BF16)) return;
    const int64_t         n = 9, m = 640, k = 1024;
    std::vector<float>    xv = normals(size_t(n * k), 4, 1.0f), wv = normals(size_t(m * k), 5, 0.03f);
    std::vector<uint16_t> wb(wv.size());
    for (size_t i = 0; i < wv.size(); ++i) wb[i] = f32_to_bf16(wv[i]);
    const ConstMat w{wb.data(), ElemType::BF16, m, k, k};
    std::string    err;
    const auto     pw = gemm.pack(w, pool, &err);
    REQUIRE(pw);
    std::vector<float> y(size_t(n * m)), ref(size_t(n * m));
    gemm.matmul(CMatF{xv.data(), n, k, k}, *pw, ConstMat{}, MatF{y.data(), n, m, m}, pool);
    ref::matmul(CMatF{xv.data(), n, k, k}, w, ConstMat{}, MatF{ref.data(), n, m, m});
    double worst = 0;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) {
            const double mag    = abs_dot(xv.data() + i * k, w, j, k);
            const double err_ij = std::fabs(double(y[size_t(i * m + j)]) - double(ref[size_t(i * m + j)]));
            worst               = std::max(worst, err_ij / mag);
            CHECK(err_ij <= (std::ldexp(1.0, -9) + double(k + 2) * std::ldexp(1.0, -24)) * mag);
        }
    INFO("worst error / sum|x w|: " << worst);
    CHECK(worst > 0);  // the inputs really were rounded (an fp32 GEMM would pass the bound trivially)
}

TEST_CASE("a few-row product runs on its padded row count's primitive unless padding costs more than a build",
          "[packed][rows]") {
    // 1.5 MiB fp32: above kSmallGemmMaxWeightBytes, so every product below runs on oneDNN primitives on any ISA.
    constexpr int64_t  m = 768, k = 512, padded = 16;
    PackedProduct      p(1, padded, m, k, 11);
    std::vector<float> y(size_t(padded * m)), ref(size_t(padded * m));
    ref::matmul(CMatF{p.xv.data(), padded, k, k}, p.packed.w, ConstMat{}, MatF{ref.data(), padded, m, m});
    // Padded or exact, each output is an fp32 sum of k products: within (k + 2) u sum |x w| of the fp64 reference
    // (Higham §3.1, as the first test case), u = 2^-24.
    const auto check_rows = [&](int64_t n) {
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < m; ++j) {
                const double mag = abs_dot(p.xv.data() + i * k, p.packed.w, j, k);
                const double e   = std::fabs(double(y[size_t(i * m + j)]) - double(ref[size_t(i * m + j)]));
                REQUIRE(e <= double(k + 2) * std::ldexp(1.0, -24) * mag);
            }
    };
    // 9 .. 16 rows, ten times each: padding 7 rows here wastes 2 * 7 * m * k = 5.5 MFLOP < kPadWasteFlops, so every
    // count runs on the one 16-row primitive (the old rule built an exact one from a count's fourth product).
    REQUIRE(2.0 * double(padded - 9) * double(m) * double(k) < kPadWasteFlops);
    for (int rep = 0; rep < 10; ++rep)
        for (int64_t n = 9; n <= padded; ++n) {
            p.gemm.matmul(CMatF{p.xv.data(), n, k, k}, *p.packed.packed, ConstMat{}, MatF{y.data(), n, m, m}, p.pool);
            INFO("rows " << n << ", repetition " << rep);
            CHECK(p.gemm.primitives() == 1u);
            if (rep == 0) check_rows(n);
        }
    // A wide weight whose padding of 1 row to 16 would waste more than a build: its exact 1-row primitive, then a
    // second one for 16 rows.
    constexpr int64_t  mw = 4096;
    std::vector<float> yw(size_t(padded * mw));
    REQUIRE(2.0 * double(padded - 1) * double(mw) * double(k) > kPadWasteFlops);
    const PackedNormals wide  = pack_normals(p.gemm, p.pool, mw, k, 13, 0.05f);
    const auto&         pwide = wide.packed;
    p.gemm.matmul(CMatF{p.xv.data(), 1, k, k}, *pwide, ConstMat{}, MatF{yw.data(), 1, mw, mw}, p.pool);
    CHECK(p.gemm.primitives() == 2u);
    p.gemm.matmul(CMatF{p.xv.data(), padded, k, k}, *pwide, ConstMat{}, MatF{yw.data(), padded, mw, mw}, p.pool);
    CHECK(p.gemm.primitives() == 3u);
}

TEST_CASE("while the pool backs off, a product runs as one block over every row, as at one thread",
          "[packed][threads]") {
    // A narrow weight (packed whole) of 1.5 MiB: oneDNN on any ISA (above kSmallGemmMaxWeightBytes), and at two
    // threads a 64-row product is two row chunks of 32, one primitive for both.
    constexpr int64_t n = 64, m = 384, k = 1024;
    PackedProduct     p(2, n, m, k, 21);
    REQUIRE(p.packed.packed->slices() == 1);
    std::vector<float> split(size_t(n * m)), whole(size_t(n * m));
    p.gemm.matmul(CMatF{p.xv.data(), n, k, k}, *p.packed.packed, ConstMat{}, MatF{split.data(), n, m, m}, p.pool);
    CHECK(p.gemm.primitives() == 1u);
    // A stall past the pool's debt: the next jobs run inline for kPoolBackoffMinNs.
    dyllm::test::stall_worker(p.pool);
    REQUIRE(p.pool.backoffs() == 1);
    const bool before = p.pool.backing_off();
    p.gemm.matmul(CMatF{p.xv.data(), n, k, k}, *p.packed.packed, ConstMat{}, MatF{whole.data(), n, m, m}, p.pool);
    const bool after = p.pool.backing_off();
    // Checked only when the product ran inside the 10 ms window (a preemption escape, not a timing assertion): it
    // built the 64-row primitive instead of running the two 32-row chunks one after the other.
    if (before && after)
        CHECK(p.gemm.primitives() == 2u);
    else
        WARN("the product did not run inside the pool's backoff window: not checked");
    // The same bits with oneDNN's brgemm (AVX-512), whose rows do not depend on the row count. AVX2's jit sgemm
    // rounds a row by the product's row count (small_gemm_for_all_rows), so there the two may differ: each is an fp32
    // sum of k products within (k + 2) u sum |x w| of the exact one (Higham §3.1), so within twice that of each other.
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) {
            if (!PackedGemm::small_gemm_for_all_rows()) {
                REQUIRE(split[size_t(i * m + j)] == whole[size_t(i * m + j)]);
                continue;
            }
            const double mag = abs_dot(p.xv.data() + i * k, p.packed.w, j, k);
            REQUIRE(std::fabs(double(split[size_t(i * m + j)]) - double(whole[size_t(i * m + j)])) <=
                    2.0 * double(k + 2) * std::ldexp(1.0, -24) * mag);
        }
}

TEST_CASE("a product split by rows over two threads equals the same product on one", "[packed][threads]") {
    // A narrow weight (packed whole) of 1.5 MiB: oneDNN on any ISA, split by rows at two threads into chunks of a
    // multiple of 16 rows and the rest (336 = 176 + 160, tiny-llada's dense step; 100 = 64 + 36; 33 = 32 + 1).
    constexpr int64_t m = 384, k = 1024, kMaxRows = 336;
    PackedProduct     one(1, kMaxRows, m, k, 31), two(2, kMaxRows, m, k, 31);
    for (int64_t n : {33, 100, 336}) {
        INFO("rows " << n);
        std::vector<float> y1(size_t(n * m)), y2(size_t(n * m), std::nanf(""));
        one.gemm.matmul(CMatF{one.xv.data(), n, k, k}, *one.packed.packed, ConstMat{}, MatF{y1.data(), n, m, m},
                        one.pool);
        const uint64_t handoffs = thread_handoffs();
        two.gemm.matmul(CMatF{two.xv.data(), n, k, k}, *two.packed.packed, ConstMat{}, MatF{y2.data(), n, m, m},
                        two.pool);
        if (two.pool.backing_off())  // a preemption escape (thread_pool.h's backoff), not a timing assertion
            WARN("the pool backed off: the product ran on one thread");
        else
            CHECK(thread_handoffs() > handoffs);  // it really was split
        // oneDNN's brgemm (AVX-512) rounds a row the same at any row count: the same bits. AVX2's jit sgemm rounds by
        // the row count (small_gemm_for_all_rows): each is an fp32 sum of k products within (k + 2) u sum |x w| of the
        // exact one (Higham §3.1), so within twice that of each other. A row left unwritten stays NaN and fails both.
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < m; ++j) {
                const float a = y1[size_t(i * m + j)], b = y2[size_t(i * m + j)];
                if (!PackedGemm::small_gemm_for_all_rows()) {
                    REQUIRE(a == b);
                    continue;
                }
                const double mag = abs_dot(one.xv.data() + i * k, one.packed.w, j, k);
                REQUIRE(std::fabs(double(a) - double(b)) <= 2.0 * double(k + 2) * std::ldexp(1.0, -24) * mag);
            }
    }
}

TEST_CASE("a product of 9 to 31 rows splits over two threads on small_gemm only where that gives oneDNN's bits",
          "[packed][threads][small]") {
    // Such a product has no two row chunks of 16 for oneDNN. The first one of each row count runs on oneDNN and is
    // checked against small_gemm; where they agree bit for bit (fp32 brgemm on AVX-512 at k <= 512 on a Zen 4), the
    // later ones split their rows over the pool on small_gemm; where not (k = 688 there), they stay on oneDNN on one
    // thread. On
    // AVX2 every product of a small weight is small_gemm's already (small_gemm_for_all_rows). Either way every product
    // equals the same product at one thread, bit for bit, and a split is a hand-off.
    const Case c = GENERATE(Case{0, 384, 128}, Case{0, 344, 128}, Case{0, 256, 256}, Case{0, 256, 688});
    INFO("m " << c.m << ", k " << c.k);
    constexpr int64_t kMaxRows = 31;
    PackedProduct     one(1, kMaxRows, c.m, c.k, 41), two(2, kMaxRows, c.m, c.k, 41);
    bool              split_seen = false;
    for (int64_t n : {16, 16, 12, 31, 24}) {
        INFO("rows " << n);
        REQUIRE(2.0 * double(n * c.m * c.k) >= kPackedParallelFlops);  // worth a split by its flops
        std::vector<float> y1(size_t(n * c.m)), y2(size_t(n * c.m), std::nanf(""));
        one.gemm.matmul(CMatF{one.xv.data(), n, c.k, c.k}, *one.packed.packed, ConstMat{}, MatF{y1.data(), n, c.m, c.m},
                        one.pool);
        const uint64_t handoffs = thread_handoffs();
        two.gemm.matmul(CMatF{two.xv.data(), n, c.k, c.k}, *two.packed.packed, ConstMat{}, MatF{y2.data(), n, c.m, c.m},
                        two.pool);
        split_seen |= thread_handoffs() > handoffs;
        int differ = 0;
        for (size_t i = 0; i < y1.size(); ++i) differ += std::memcmp(&y1[i], &y2[i], 4) != 0;
        CHECK(differ == 0);
    }
    // On brgemm the first product of a row count never splits (it is the check); the second 16-row one does where the
    // bits agreed.
    if (!PackedGemm::small_gemm_for_all_rows() && c.k <= 512 && !two.pool.backing_off() && !split_seen)
        WARN("no split of a 9-31 row product: small_gemm did not give oneDNN's bits for this weight on this CPU");
    if (!PackedGemm::small_gemm_for_all_rows() && c.k > 512) CHECK_FALSE(split_seen);  // brgemm blocks k > 512 here
}

TEST_CASE("the provider runs on the engine's pool: no thread of its own", "[packed][threads]") {
    ThreadPool            pool(2);
    PackedGemm            gemm(2);
    const int             before = process_threads();  // the pool's worker and whatever OpenBLAS started at load
    std::vector<float>    xv = normals(64 * 512, 6, 1.0f), wv = normals(1024 * 512, 7, 0.05f);
    std::vector<uint16_t> wb(wv.size());
    for (size_t i = 0; i < wv.size(); ++i) wb[i] = f32_to_bf16(wv[i]);
    std::string err;
    const auto  pf = gemm.pack(ConstMat{wv.data(), ElemType::F32, 1024, 512, 512}, pool, &err);
    const auto  pb = PackedGemm::supports(ElemType::BF16)  // AVX-512 CPUs only
                         ? gemm.pack(ConstMat{wb.data(), ElemType::BF16, 1024, 512, 512}, pool, &err)
                         : nullptr;
    REQUIRE(pf);
    CHECK(pf->slices() >= 2);  // wide enough to be split across the two threads
    std::vector<float> y(64 * 1024);
    for (int r = 0; r < 3; ++r) {
        gemm.matmul(CMatF{xv.data(), 64, 512, 512}, *pf, ConstMat{}, MatF{y.data(), 64, 1024, 1024}, pool);
        if (pb) gemm.matmul(CMatF{xv.data(), 64, 512, 512}, *pb, ConstMat{}, MatF{y.data(), 64, 1024, 1024}, pool);
    }
    // An OpenMP team (oneDNN's default threading) would add n - 1 threads that spin beside the pool after each GEMM.
    CHECK(process_threads() == before);
}

TEST_CASE("a bf16 checkpoint decodes like the same weights in fp32 on a wide shape", "[packed][model]") {
    // 1024-wide, 2 layers: the shape class of real models (the GEMMs are split into slices and threads), small enough
    // for CI (~25 M parameters, well under a second per forward).
    ModelConfig cfg   = dyllm::test::tiny_config(Family::LLaDA);
    cfg.n_embd        = 1024;
    cfg.n_head        = 8;
    cfg.n_kv_head     = 8;
    cfg.head_dim      = 128;
    cfg.n_ff          = 2816;
    cfg.n_layer       = 2;
    const auto dir32  = dyllm::test::make_checkpoint(cfg, DType::F32, 1, 11);
    const auto dir16  = dyllm::test::make_checkpoint(cfg, DType::BF16, 1, 11);  // the same draws, rounded to bf16
    auto       m32    = Model::load(dir32.string(), BackendKind::Cpu, 2);
    auto       m16    = Model::load(dir16.string(), BackendKind::Cpu, 2);
    const auto prompt = dyllm::test::random_prompt(cfg, 24, 5);

    DiffusionParams p;
    p.method          = Method::Original;
    p.gen_length      = 8;
    p.steps           = 8;
    p.block_length    = 8;
    p.ignore_eos      = true;
    auto first_logits = [&](const Model& m) {
        std::vector<float> first;
        Session            s(m);
        s.set_logits_observer(
            [&](int step, const std::vector<std::pair<int, int>>&, const std::vector<float>& lg, int64_t) {
                if (first.empty()) first = lg;
            });
        s.start({prompt}, p);
        s.run();
        return first;
    };
    const std::vector<float> a = first_logits(*m32), b = first_logits(*m16);
    REQUIRE(a.size() == b.size());
    REQUIRE(!a.empty());
    double max_ref = 0, max_err = 0, se = 0, sr = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        max_ref = std::max(max_ref, std::fabs(double(a[i])));
        max_err = std::max(max_err, std::fabs(double(a[i]) - double(b[i])));
        se += (double(a[i]) - double(b[i])) * (double(a[i]) - double(b[i]));
        sr += double(a[i]) * double(a[i]);
    }
    INFO("max |logit| " << max_ref << ", max |diff| " << max_err << ", relative rms diff " << std::sqrt(se / sr));
    CHECK(max_ref > 0);
    // bf16 keeps 8 significant bits: every GEMM input (weights at load, activations per call) is rounded by up to
    // 2^-9 relative, so each of the 2 x 7 + 1 GEMMs adds ~2^-8 relative noise to its output; independent noise over 15
    // GEMMs grows to ~sqrt(15) 2^-8 ~ 1.5% rms of the logit scale. Bounds at ~3x that: 5% rms, 10% of max|logit| for
    // the worst element (the CUDA run test's whole-run bound for the same bf16 inputs is 5% + 0.05). A wrong layout
    // or slice is O(100%). Measured: 0.8% rms, max 1.0% of max|logit|.
    CHECK(std::sqrt(se / sr) <= 0.05);
    CHECK(max_err <= 0.10 * max_ref);
}

int main(int argc, char** argv) {
    return dyllm::test::run_skippable(argc, argv,
                                      {{"", [] {
                                            return PackedGemm::supports(ElemType::F32)
                                                       ? std::string()
                                                       : std::string("no GEMM provider in this build (libdnnl-dev)");
                                        }}});
}

TEST_CASE("where oneDNN's rounding depends on the row count, a row's output does not", "[packed][small][batch]") {
    // A lock-step batch stacks the rows of several sequences into one product, and a product's primitive may run
    // padded rows, so a row decodes the same alone and in a batch only if its output does not depend on the product's
    // row count. oneDNN's generic jit sgemm (its f32 matmul on AVX2 CPUs) rounds a row differently at different row
    // counts (here: 31 or 32 rows of [128, 128], 9 or more of [374, 128]); PackedGemm then runs every product of a
    // small weight on small_gemm (small_gemm_for_all_rows), and every row of an n-row product must equal, bit for bit,
    // the same row run alone. With oneDNN's brgemm (AVX-512) products of more than 8 rows stay on oneDNN.
    if (!PackedGemm::small_gemm_for_all_rows()) {
        WARN("oneDNN's f32 matmul on this CPU is its brgemm: products of more than 8 rows run on it");
        return;
    }
    const int  threads = GENERATE(1, 2);
    const Case c       = GENERATE(Case{0, 128, 128}, Case{0, 256, 128}, Case{0, 128, 256}, Case{0, 374, 128},
                                  Case{0, 688, 256}, Case{0, 40, 100});
    INFO("threads " << threads << ", m " << c.m << ", k " << c.k);
    ThreadPool               pool(threads);
    PackedGemm               gemm(threads);
    const std::vector<float> bias   = normals(size_t(c.m), 27, 0.1f);
    const PackedNormals      packed = pack_normals(gemm, pool, c.m, c.k, 26, 0.05f);
    const auto&              pw     = packed.packed;
    const ConstMat           b{bias.data(), ElemType::F32, 1, c.m, c.m};
    constexpr int64_t        kMaxRows = 200;
    const std::vector<float> xv       = normals(size_t(kMaxRows * c.k), 28, 1.0f);
    std::vector<float>       alone(size_t(kMaxRows * c.m));
    for (int64_t r = 0; r < kMaxRows; ++r)
        gemm.matmul(CMatF{xv.data() + r * c.k, 1, c.k, c.k}, *pw, b, MatF{alone.data() + r * c.m, 1, c.m, c.m}, pool);
    for (int64_t n : {2, 7, 8, 9, 16, 17, 31, 32, 33, 64, 100, 200}) {
        std::vector<float> got(size_t(n * c.m));
        gemm.matmul(CMatF{xv.data(), n, c.k, c.k}, *pw, b, MatF{got.data(), n, c.m, c.m}, pool);
        int differ = 0;
        for (size_t i = 0; i < got.size(); ++i) differ += got[i] != alone[i];
        CAPTURE(n);
        CHECK(differ == 0);
    }
}
