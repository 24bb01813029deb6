// The quantized block types: layouts on hand-built blocks, quantize_row against hashes of ggml's reference
// quantizers' output on the same input, round-trip error bounds, and the optimised quantized product against the
// fp64 reference on dequantized weights.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <algorithm>
#include <vector>

#include "kernels/cpu/quant_matmul.h"
#include "kernels/cpu/ref/quant.h"
#include "test_kernels_util.h"

using namespace dyllm;
using cpu::QuantType;

namespace {

const QuantType kAllQuant[] = {QuantType::Q8_0, QuantType::Q4_0, QuantType::Q4_K, QuantType::Q5_K, QuantType::Q6_K};

uint64_t fnv1a(const std::vector<uint8_t>& b) {
    uint64_t h = 1469598103934665603ull;
    for (uint8_t c : b) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

std::vector<uint8_t> quantize(QuantType t, const std::vector<float>& x) {
    std::vector<uint8_t> q(cpu::quant_row_bytes(t, int64_t(x.size())));
    cpu::quantize_row(t, x.data(), q.data(), int64_t(x.size()));
    return q;
}

std::vector<float> dequantize(QuantType t, const std::vector<uint8_t>& q, int64_t n) {
    std::vector<float> y(static_cast<size_t>(n));
    cpu::dequantize_row(t, q.data(), y.data(), n);
    return y;
}

}  // namespace

TEST_CASE("quantized blocks decode as the format defines", "[quant]") {
    SECTION("Q8_0: d * q") {
        cpu::BlockQ8_0 b{};
        b.d = 0x3800;  // 0.5
        for (int j = 0; j < 32; ++j) b.qs[j] = int8_t(j - 16);
        float y[32];
        cpu::dequantize_row(QuantType::Q8_0, &b, y, 32);
        for (int j = 0; j < 32; ++j) CHECK(y[j] == 0.5f * float(j - 16));
    }
    SECTION("Q4_0: d * (nibble - 8), element j low, j + 16 high") {
        cpu::BlockQ4_0 b{};
        b.d = 0x4000;  // 2
        for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | ((15 - j) << 4));
        float y[32];
        cpu::dequantize_row(QuantType::Q4_0, &b, y, 32);
        for (int j = 0; j < 16; ++j) {
            CHECK(y[j] == 2.0f * float(j - 8));
            CHECK(y[j + 16] == 2.0f * float(15 - j - 8));
        }
    }
    SECTION("Q4_K and Q5_K: 6-bit scales and mins, nibble pairs per 64 elements, fifth bit in qh") {
        // Sub-block j: scale s_j = 33 + j (needs the high bits for j >= 4), min m_j = 2 j + 1.
        uint8_t sc[12] = {};
        for (int j = 0; j < 8; ++j) {
            const int s = 33 + j, m = 2 * j + 1;
            if (j < 4) {
                sc[j]     = uint8_t(s);
                sc[j + 4] = uint8_t(m);
            } else {
                sc[j + 4] = uint8_t((s & 15) | ((m & 15) << 4));
                sc[j - 4] |= uint8_t((s >> 4) << 6);
                sc[j] |= uint8_t((m >> 4) << 6);
            }
        }
        for (int j = 0; j < 8; ++j) {
            uint8_t s, m;
            cpu::quant_k_scale_min(j, sc, &s, &m);
            CHECK(int(s) == 33 + j);
            CHECK(int(m) == 2 * j + 1);
        }
        cpu::BlockQ4_K b4{};
        cpu::BlockQ5_K b5{};
        b4.d = b5.d = 0x3c00;        // 1
        b4.dmin = b5.dmin = 0x3800;  // 0.5
        std::memcpy(b4.scales, sc, 12);
        std::memcpy(b5.scales, sc, 12);
        auto level = [](int e) { return (e * 7) % 32; };  // element e's 5-bit level
        for (int g = 0; g < 4; ++g)
            for (int l = 0; l < 32; ++l) {
                const int lo = level(64 * g + l), hi = level(64 * g + 32 + l);
                b4.qs[32 * g + l] = uint8_t((lo & 15) | ((hi & 15) << 4));
                b5.qs[32 * g + l] = b4.qs[32 * g + l];
                b5.qh[l] |= uint8_t(((lo >> 4) << (2 * g)) | ((hi >> 4) << (2 * g + 1)));
            }
        float y4[256], y5[256];
        cpu::dequantize_row(QuantType::Q4_K, &b4, y4, 256);
        cpu::dequantize_row(QuantType::Q5_K, &b5, y5, 256);
        for (int e = 0; e < 256; ++e) {
            const int j = e / 32;
            CHECK(y4[e] == float(33 + j) * float(level(e) & 15) - 0.5f * float(2 * j + 1));
            CHECK(y5[e] == float(33 + j) * float(level(e)) - 0.5f * float(2 * j + 1));
        }
    }
    SECTION("Q6_K: d * scale[e / 16] * (q - 32), 4 low bits in ql, 2 high in qh") {
        cpu::BlockQ6_K b{};
        b.d    = 0x3400;  // 0.25
        auto q = [](int e) { return (e * 5 + 3) % 64; };
        for (int j = 0; j < 16; ++j) b.scales[j] = int8_t(j - 8);
        for (int h = 0; h < 2; ++h)
            for (int l = 0; l < 32; ++l) {
                const int e           = 128 * h + l;
                b.ql[64 * h + l]      = uint8_t((q(e) & 15) | ((q(e + 64) & 15) << 4));
                b.ql[64 * h + l + 32] = uint8_t((q(e + 32) & 15) | ((q(e + 96) & 15) << 4));
                b.qh[32 * h + l] =
                    uint8_t((q(e) >> 4) | ((q(e + 32) >> 4) << 2) | ((q(e + 64) >> 4) << 4) | ((q(e + 96) >> 4) << 6));
            }
        float y[256];
        cpu::dequantize_row(QuantType::Q6_K, &b, y, 256);
        for (int e = 0; e < 256; ++e) CHECK(y[e] == 0.25f * float(e / 16 - 8) * float(q(e) - 32));
    }
}

TEST_CASE("quantize_row writes the bytes ggml's reference quantizers write", "[quant]") {
    // Input: six 256-element blocks of integers / 1024 (exact in fp32), every third block zero and every third offset
    // by 0.5 (an all-positive block: Q4_K's min clamps to 0). The hashes are of the bytes ggml's quantize_row_*_ref
    // (ggml-quants.c) wrote for this input; the same search in the same fp32 order gives the same bytes.
    std::vector<float> x(256 * 6);
    for (size_t i = 0; i < x.size(); ++i) {
        const int h = int((uint32_t(i) * 2654435761u) >> 20);
        x[i] =
            float(h % 2001 - 1000) / 1024.0f * ((i / 256) % 3 == 0 ? 0.0f : 1.0f) + ((i / 256) % 3 == 1 ? 0.5f : 0.0f);
    }
    CHECK(fnv1a(quantize(QuantType::Q8_0, x)) == 0x81b3d7aaaa7ff4bfull);
    CHECK(fnv1a(quantize(QuantType::Q4_0, x)) == 0x87cf8a6a7c177d6bull);
    CHECK(fnv1a(quantize(QuantType::Q4_K, x)) == 0x7855488dfde46363ull);
    CHECK(fnv1a(quantize(QuantType::Q5_K, x)) == 0xd5849898d4324b4full);
    CHECK(fnv1a(quantize(QuantType::Q6_K, x)) == 0xc1c9e8ee8a5e1104ull);
}

TEST_CASE("quantize then dequantize stays within each type's step", "[quant]") {
    const int64_t n = 2048;
    const auto    x = test::random_floats(size_t(n), 11);
    for (QuantType t : kAllQuant) {
        INFO(cpu::quant_name(t));
        const auto y = dequantize(t, quantize(t, x), n);
        // Relative rms error of uniform [-1, 1) values: half a step over the level count (Q8_0 255 levels, Q4_0 16,
        // Q4_K 16, Q5_K 32, Q6_K 64) is amax / (levels - 1) / sqrt(12) rms, ~1.7 / (levels - 1) relative to the rms
        // of a uniform value (1 / sqrt(3)); the bound allows 2x that for fp16 scales and 6-bit sub-block scales.
        const double levels = t == QuantType::Q8_0 ? 255 : t == QuantType::Q6_K ? 64 : t == QuantType::Q5_K ? 32 : 16;
        double       e2 = 0, x2 = 0;
        for (int64_t i = 0; i < n; ++i) {
            e2 += double(x[size_t(i)] - y[size_t(i)]) * double(x[size_t(i)] - y[size_t(i)]);
            x2 += double(x[size_t(i)]) * double(x[size_t(i)]);
        }
        CHECK(std::sqrt(e2 / x2) <= 2.0 * 1.0 / (levels - 1));
        // An all-zero row stays zero (no 0 / 0).
        const auto z = dequantize(t, quantize(t, std::vector<float>(size_t(n), 0.0f)), n);
        for (float v : z) REQUIRE(v == 0.0f);
    }
}

namespace {

struct QuantWeights {
    std::vector<uint8_t> bytes;
    std::vector<float>   decoded;
    cpu::QuantMat        mat;
};
QuantWeights make_weights(QuantType t, int64_t m, int64_t k, uint32_t seed) {
    QuantWeights w;
    const auto   v  = test::random_floats(size_t(m * k), seed);
    const size_t rb = cpu::quant_row_bytes(t, k);
    w.bytes.resize(std::max<size_t>(1, rb * size_t(m)));
    w.decoded.resize(size_t(m * k));
    for (int64_t r = 0; r < m; ++r) {
        cpu::quantize_row(t, v.data() + r * k, w.bytes.data() + size_t(r) * rb, k);
        cpu::dequantize_row(t, w.bytes.data() + size_t(r) * rb, w.decoded.data() + r * k, k);
    }
    w.mat = cpu::QuantMat{w.bytes.data(), t, m, k, int64_t(rb)};
    return w;
}

bool isa_available(cpu::QuantIsa isa) {
    if (isa == cpu::QuantIsa::Avx512) return __builtin_cpu_supports("x86-64-v4");
    if (isa == cpu::QuantIsa::Avx2) return __builtin_cpu_supports("x86-64-v3");
    return true;
}

}  // namespace

TEST_CASE("quant_matmul matches the fp64 reference on every type and shape", "[quant]") {
    cpu::ThreadPool pool(2);
    // n: 1 row, odd counts, a count past a panel's (quant_panel_rows), many rows; m: 1, odd, several panels; k:
    // one block, odd block counts, a large row.
    const int64_t shapes[][3] = {{1, 1, 256},     {1, 7, 768},    {3, 33, 512},  {17, 130, 256},
                                 {40, 300, 1280}, {5, 260, 4096}, {64, 17, 2304}};
    for (QuantType t : kAllQuant)
        for (const auto& sh : shapes) {
            const int64_t n = sh[0], m = sh[1], k = sh[2];
            INFO(cpu::quant_name(t) << " n " << n << " m " << m << " k " << k);
            const QuantWeights  w = make_weights(t, m, k, uint32_t(n * 7 + m));
            const auto          x = test::random_floats(size_t(n * k), 5);
            const auto          b = test::random_floats(size_t(m), 6);
            std::vector<float>  got(size_t(n * m)), ref(got.size());
            const cpu::ConstMat bias{b.data(), cpu::ElemType::F32, 1, m, m};
            cpu::quant_matmul(cpu::CMatF{x.data(), n, k, k}, w.mat, bias, cpu::MatF{got.data(), n, m, m}, pool);
            cpu::ref::quant_matmul(cpu::CMatF{x.data(), n, k, k}, w.mat, bias, cpu::MatF{ref.data(), n, m, m});
            // The decoded weights are the reference's values exactly and x is not rounded: the only difference is
            // sgemm's fp32 accumulation of k products and the bias add, at most (k + 2) u_32 of sum_c |x_c w_c| + |b|.
            bool ok = true;
            for (int64_t i = 0; i < n && ok; ++i)
                for (int64_t o = 0; o < m; ++o) {
                    double s = std::fabs(double(b[size_t(o)]));
                    for (int64_t c = 0; c < k; ++c)
                        s += std::fabs(double(x[size_t(i * k + c)]) * double(w.decoded[size_t(o * k + c)]));
                    const double err = std::fabs(double(got[size_t(i * m + o)]) - double(ref[size_t(i * m + o)]));
                    if (!(err <= double(k + 2) * test::kU32 * s)) {
                        UNSCOPED_INFO("row " << i << " output " << o << " got " << got[size_t(i * m + o)] << " ref "
                                             << ref[size_t(i * m + o)]);
                        ok = false;
                        break;
                    }
                }
            CHECK(ok);
        }
}

TEST_CASE("quant_matmul gives the same bits at any thread count and instruction set", "[quant]") {
    const int64_t n = 9, m = 100, k = 1024;
    for (QuantType t : kAllQuant) {
        INFO(cpu::quant_name(t));
        const QuantWeights w   = make_weights(t, m, k, 21);
        const auto         x   = test::random_floats(size_t(n * k), 22);
        auto               run = [&](int threads) {
            cpu::ThreadPool    pool(threads);
            std::vector<float> y(size_t(n * m));
            cpu::quant_matmul(cpu::CMatF{x.data(), n, k, k}, w.mat, cpu::ConstMat{}, cpu::MatF{y.data(), n, m, m},
                                            pool);
            return y;
        };
        const auto one = run(1);
        CHECK(run(2) == one);
        CHECK(run(3) == one);
        // The block decoders compiled per instruction set give dequantize_row's values exactly (each decoded value is
        // the same fp32 products in the same order), so the products agree bit for bit.
        for (cpu::QuantIsa isa : {cpu::QuantIsa::Avx512, cpu::QuantIsa::Avx2, cpu::QuantIsa::Baseline}) {
            if (!isa_available(isa)) continue;
            INFO(cpu::quant_isa_name(isa));
            cpu::quant_force_isa(isa);
            CHECK(cpu::quant_isa() == isa);
            CHECK(run(2) == one);
            std::vector<float> rows(size_t(3 * k));
            const int32_t      ids[3] = {int32_t(m - 1), 0, 42};
            cpu::quant_gather_rows(w.mat, ids, cpu::MatF{rows.data(), 3, k, k});
            for (int i = 0; i < 3; ++i)
                CHECK(std::equal(rows.begin() + i * k, rows.begin() + (i + 1) * k,
                                 w.decoded.begin() + int64_t(ids[i]) * k));
        }
        cpu::quant_force_isa(cpu::QuantIsa::Auto);
    }
}
