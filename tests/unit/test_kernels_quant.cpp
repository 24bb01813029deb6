// The quantized block types: layouts on hand-built blocks, quantize_row against hashes of ggml's reference
// quantizers' output on the same input, round-trip error bounds, and the optimised quantized product against the
// fp64 reference on dequantized weights (decode path, and the integer path within its activation rounding), the
// integer path against a scalar reimplementation of its integer arithmetic, and every instruction set against the
// others.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <algorithm>
#include <utility>
#include <vector>

#include "kernels/common/dtype_convert.h"
#include "kernels/cpu/quant_amx_int8.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu/quant_matmul.h"
#include "kernels/cpu/ref/quant.h"
#include "test_kernels_util.h"
#include "test_quant_weights.h"

using namespace dyllm;
using cpu::QuantType;
using test::make_quant_weights;
using test::QuantWeights;

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

bool isa_available(cpu::QuantIsa isa) {
    return cpu::quant_isa_available(isa);
}

}  // namespace

TEST_CASE("quant_matmul matches the fp64 reference on every type and shape", "[quant]") {
    cpu::ThreadPool pool(2);
    cpu::quant_force_path(cpu::QuantPath::Decode);
    // n: 1 row, odd counts, a count past a panel's (quant_panel_rows), many rows; m: 1, odd, several panels; k:
    // one block, odd block counts, a large row.
    const int64_t shapes[][3] = {{1, 1, 256},     {1, 7, 768},    {3, 33, 512},  {17, 130, 256},
                                 {40, 300, 1280}, {5, 260, 4096}, {64, 17, 2304}};
    for (QuantType t : kAllQuant)
        for (const auto& sh : shapes) {
            const int64_t n = sh[0], m = sh[1], k = sh[2];
            INFO(cpu::quant_name(t) << " n " << n << " m " << m << " k " << k);
            const QuantWeights  w = make_quant_weights(t, m, k, uint32_t(n * 7 + m));
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
    cpu::quant_force_path(cpu::QuantPath::Auto);
}

TEST_CASE("quant_matmul gives the same bits at any thread count and instruction set", "[quant]") {
    const int64_t n = 9, m = 100, k = 1024;
    for (cpu::QuantPath path : {cpu::QuantPath::Dot, cpu::QuantPath::Decode})
        for (QuantType t : kAllQuant) {
            const bool dot = path == cpu::QuantPath::Dot && cpu::quant_dot_supported(t);
            INFO(cpu::quant_name(t) << (dot ? " integer path" : " decode path"));
            cpu::quant_force_path(path);
            const QuantWeights w   = make_quant_weights(t, m, k, 21);
            const auto         x   = test::random_floats(size_t(n * k), 22);
            auto               run = [&](int threads) {
                cpu::ThreadPool    pool(threads);
                std::vector<float> y(size_t(n * m));
                cpu::quant_matmul(cpu::CMatF{x.data(), n, k, k}, w.mat, cpu::ConstMat{}, cpu::MatF{y.data(), n, m, m},
                                                pool);
                return y;
            };
            // The block decoders compiled per instruction set give dequantize_row's values exactly (each decoded value
            // is the same fp32 products in the same order), and the 8-lane integer kernels give the same exact integer
            // lanes (vpdpbusd and pmaddubsw + pmaddwd group the same 4 bytes per lane) followed by the same fp32
            // operations, so the products agree bit for bit. The AVX-512 K-quant kernels sum 16 lanes: the same bits
            // at any thread count, and the integer-path test below bounds them. Baseline has no integer path.
            const auto wide_lanes = [&](cpu::QuantIsa isa) {
                return dot && isa == cpu::QuantIsa::Avx512 && (t == QuantType::Q4_K || t == QuantType::Q6_K);
            };
            if (dot && !isa_available(cpu::QuantIsa::Avx2)) continue;
            cpu::quant_force_isa(dot ? cpu::QuantIsa::Avx2 : cpu::QuantIsa::Auto);
            const auto one = run(1);
            for (cpu::QuantIsa isa :
                 {cpu::QuantIsa::Avx512, cpu::QuantIsa::AvxVnni, cpu::QuantIsa::Avx2, cpu::QuantIsa::Baseline}) {
                if (!isa_available(isa) || (dot && isa == cpu::QuantIsa::Baseline)) continue;
                INFO(cpu::quant_isa_name(isa));
                cpu::quant_force_isa(isa);
                CHECK(cpu::quant_isa() == isa);
                const auto two = run(2);
                CHECK(run(3) == two);
                CHECK(run(1) == two);
                if (!wide_lanes(isa)) CHECK(two == one);
                std::vector<float> rows(size_t(3 * k));
                const int32_t      ids[3] = {int32_t(m - 1), 0, 42};
                cpu::quant_gather_rows(w.mat, ids, cpu::MatF{rows.data(), 3, k, k});
                for (int i = 0; i < 3; ++i)
                    CHECK(std::equal(rows.begin() + i * k, rows.begin() + (i + 1) * k,
                                     w.decoded.begin() + int64_t(ids[i]) * k));
            }
            cpu::quant_force_isa(cpu::QuantIsa::Auto);
        }
    cpu::quant_force_path(cpu::QuantPath::Auto);
}

namespace {

// Per element c of a W row: |w_c| for Q8_0 / Q4_0 / Q6_K; |d sc q_c| + |dmin m_c| for Q4_K / Q5_K, the two terms the
// integer path sums separately (they may cancel in w_c): decoded from copies of the blocks with dmin, then d, zeroed.
std::vector<double> abs_terms(QuantType t, const uint8_t* row, int64_t k) {
    std::vector<float> a(static_cast<size_t>(k)), b(static_cast<size_t>(k));
    const size_t       rb = cpu::quant_row_bytes(t, k);
    if (t == QuantType::Q4_K || t == QuantType::Q5_K) {
        std::vector<uint8_t> c0(row, row + rb), c1(row, row + rb);
        const size_t         bb = cpu::quant_block_bytes(t);
        for (size_t o = 0; o < rb; o += bb) {
            std::memset(c0.data() + o + 2, 0, 2);  // dmin
            std::memset(c1.data() + o, 0, 2);      // d
        }
        cpu::dequantize_row(t, c0.data(), a.data(), k);
        cpu::dequantize_row(t, c1.data(), b.data(), k);
    } else {
        cpu::dequantize_row(t, row, a.data(), k);
    }
    std::vector<double> r(static_cast<size_t>(k));
    for (int64_t c = 0; c < k; ++c) r[size_t(c)] = std::fabs(double(a[size_t(c)])) + std::fabs(double(b[size_t(c)]));
    return r;
}

// A plain scalar reimplementation of the integer path's arithmetic on one x row (already quantized by
// quantize_act_row) and one W row: per block the integer sums, exact in int64, combined in fp64. *mag receives the
// same sum over absolute values (each integer term by its magnitude), the scale of the fp32 combination's rounding.
double int_dot_ref(QuantType t, const void* xq, const uint8_t* wrow, int64_t k, double* mag) {
    double v = 0, a = 0;
    if (cpu::quant_block_elems(t) == 32) {
        const auto* xb = static_cast<const cpu::ActBlock32*>(xq);
        for (int64_t b = 0; b < k / 32; ++b) {
            int64_t s = 0, sa = 0;
            double  dw;
            for (int j = 0; j < 32; ++j) {
                int q;
                if (t == QuantType::Q8_0) {
                    const auto* wb = reinterpret_cast<const cpu::BlockQ8_0*>(wrow) + b;
                    q              = wb->qs[j];
                    dw             = f16_to_f32(wb->d);
                } else {
                    const auto* wb = reinterpret_cast<const cpu::BlockQ4_0*>(wrow) + b;
                    q              = int(j < 16 ? wb->qs[j] & 15 : wb->qs[j - 16] >> 4) - 8;
                    dw             = f16_to_f32(wb->d);
                }
                s += int64_t(q) * xb[b].qs[j];
                sa += std::abs(int64_t(q) * xb[b].qs[j]);
            }
            v += double(xb[b].d) * dw * double(s);
            a += std::fabs(double(xb[b].d) * dw) * double(sa);
        }
    } else {
        const auto* xb = static_cast<const cpu::ActBlock256*>(xq);
        for (int64_t b = 0; b < k / 256; ++b) {
            const int8_t* x = xb[b].qs;
            if (t == QuantType::Q4_K) {
                const auto* wb = reinterpret_cast<const cpu::BlockQ4_K*>(wrow) + b;
                int64_t     s = 0, sa = 0, mn = 0, ma = 0;
                for (int j = 0; j < 8; ++j) {
                    uint8_t sc, m;
                    cpu::quant_k_scale_min(j, wb->scales, &sc, &m);
                    int64_t dj = 0, dja = 0, bs = 0;
                    for (int l = 0; l < 32; ++l) {
                        const int e = 32 * j + l;
                        const int q = (wb->qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 15;
                        dj += q * x[e];
                        dja += std::abs(q * x[e]);
                        bs += x[e];
                    }
                    s += sc * dj;
                    sa += sc * dja;
                    mn += m * bs;
                    ma += m * std::abs(bs);
                }
                const double dw = f16_to_f32(wb->d), dm = f16_to_f32(wb->dmin), dx = xb[b].d;
                v += dx * (dw * double(s) - dm * double(mn));
                a += std::fabs(dx) * (std::fabs(dw) * double(sa) + std::fabs(dm) * double(ma));
            } else {
                const auto* wb = reinterpret_cast<const cpu::BlockQ6_K*>(wrow) + b;
                int64_t     s = 0, sa = 0;
                for (int e = 0; e < 256; ++e) {
                    const int h = e / 128, p = (e % 128) / 32, l = e % 32;
                    const int lo = (wb->ql[64 * h + 32 * (p & 1) + l] >> (4 * (p >> 1))) & 15;
                    const int hi = (wb->qh[32 * h + l] >> (2 * p)) & 3;
                    const int q  = lo | (hi << 4);
                    const int sc = wb->scales[e / 16];
                    s += int64_t(sc) * (q - 32) * x[e];
                    sa += std::abs(int64_t(sc) * x[e]) * (q + 32);
                }
                const double dw = f16_to_f32(wb->d), dx = xb[b].d;
                v += dx * dw * double(s);
                a += std::fabs(dx * dw) * double(sa);
            }
        }
    }
    *mag = a;
    return v;
}

}  // namespace

TEST_CASE("activations quantize per block to int8 within half a step", "[quant]") {
    const int64_t k = 512;
    auto          x = test::random_floats(size_t(k), 31, -3.0f, 3.0f);
    std::fill(x.begin() + 256, x.begin() + 288, 0.0f);  // an all-zero 32-block
    for (QuantType t : {QuantType::Q8_0, QuantType::Q4_K}) {
        const int64_t        be = cpu::quant_block_elems(t);
        std::vector<uint8_t> q(cpu::quant_act_row_bytes(t, k));
        cpu::quantize_act_row(t, x.data(), q.data(), k);
        for (int64_t b = 0; b < k / be; ++b) {
            const float*  xs = x.data() + b * be;
            float         d;
            const int8_t* qs;
            if (be == 32) {
                const auto* ab = reinterpret_cast<const cpu::ActBlock32*>(q.data()) + b;
                d              = ab->d;
                qs             = ab->qs;
            } else {
                const auto* ab = reinterpret_cast<const cpu::ActBlock256*>(q.data()) + b;
                d              = ab->d;
                qs             = ab->qs;
                for (int j = 0; j < 16; ++j) {
                    int s = 0;
                    for (int l = 0; l < 16; ++l) s += qs[16 * j + l];
                    CHECK(ab->bsums[j] == s);
                }
            }
            float amax = 0;
            for (int64_t j = 0; j < be; ++j) amax = std::max(amax, std::fabs(xs[j]));
            CHECK(d == amax / 127.0f);
            int qmax = 0;
            for (int64_t j = 0; j < be; ++j) {
                // Half a step, plus the fp32 roundings of 127 / amax, x * (127 / amax) and d (each u_32 relative, on
                // values up to 127 steps): 1e-4 of a step covers them.
                CHECK(std::fabs(double(xs[j]) - double(d) * qs[j]) <= (0.5 + 1e-4) * double(d));
                qmax = std::max(qmax, std::abs(int(qs[j])));
            }
            CHECK(qmax == (amax > 0 ? 127 : 0));
        }
    }
}

TEST_CASE("the integer paths match the fp64 reference within their activation rounding", "[quant]") {
    // k = 800: 25 blocks of the 32-element types (the AMX-INT8 path's units of 8 blocks end short; not a K-quant k).
    const int64_t shapes[][3] = {{1, 1, 256},    {1, 7, 768},   {3, 33, 512},  {17, 130, 256},
                                 {40, 19, 1280}, {5, 60, 4096}, {16, 70, 512}, {6, 45, 800}};
    // Every instruction set with an integer path, the default one at 1, 2 and 3 threads; the AMX-INT8 path (where
    // the CPU has it) at 1 and 3 threads.
    struct Config {
        cpu::QuantIsa  isa;
        int            threads;
        cpu::QuantPath path = cpu::QuantPath::Dot;
    };
    const Config configs[]    = {{cpu::QuantIsa::Auto, 1},
                                 {cpu::QuantIsa::Auto, 2},
                                 {cpu::QuantIsa::Auto, 3},
                                 {cpu::QuantIsa::Avx512, 2},
                                 {cpu::QuantIsa::AvxVnni, 2},
                                 {cpu::QuantIsa::Avx2, 2},
                                 {cpu::QuantIsa::Avx512, 1, cpu::QuantPath::AmxInt8},
                                 {cpu::QuantIsa::Avx512, 3, cpu::QuantPath::AmxInt8}};
    bool         amx_int8_ran = false;
    for (const auto& [isa, threads, path] : configs) {
        if (isa == cpu::QuantIsa::Auto ? !isa_available(cpu::QuantIsa::Avx2) : !isa_available(isa)) continue;
        const bool amx_int8 = path == cpu::QuantPath::AmxInt8;
        if (amx_int8 && !cpu::quant_amx_int8_available()) continue;
        cpu::quant_force_isa(isa);
        cpu::ThreadPool pool(threads);
        cpu::quant_force_path(path);
        for (QuantType t : kAllQuant) {
            if (!cpu::quant_dot_supported(t) || (amx_int8 && !cpu::quant_amx_int8_supported(t))) continue;
            for (const auto& sh : shapes) {
                const int64_t n = sh[0], m = sh[1], k = sh[2], be = cpu::quant_block_elems(t), nb = k / be;
                if ((amx_int8 && n > cpu::kQuantAmxInt8MaxRows) || k % be != 0) continue;
                amx_int8_ran |= amx_int8;
                // The fp32 roundings after the exact integer sums: the 8-lane kernels' (see below), or AMX-INT8's
                // per block 8 scaled sub-block sums and 8 min terms added to one value, its scaling by d_x and its
                // addition to the output (18 per block, each at most u_32 of that block's share of the absolute
                // sum), then the bias add and the output's rounding.
                const int64_t rounds = amx_int8 ? nb + 20 : nb + 10;
                INFO(cpu::quant_name(t) << " n " << n << " m " << m << " k " << k << " threads " << threads << " "
                                        << cpu::quant_isa_name(cpu::quant_isa()) << (amx_int8 ? " amx-int8" : ""));
                const QuantWeights  w = make_quant_weights(t, m, k, uint32_t(n * 7 + m));
                const auto          x = test::random_floats(size_t(n * k), 5);
                const auto          b = test::random_floats(size_t(m), 6);
                std::vector<float>  got(size_t(n * m)), ref(got.size());
                const cpu::ConstMat bias{b.data(), cpu::ElemType::F32, 1, m, m};
                cpu::quant_matmul(cpu::CMatF{x.data(), n, k, k}, w.mat, bias, cpu::MatF{got.data(), n, m, m}, pool);
                cpu::ref::quant_matmul(cpu::CMatF{x.data(), n, k, k}, w.mat, bias, cpu::MatF{ref.data(), n, m, m});
                std::vector<uint8_t> xq(cpu::quant_act_row_bytes(t, k));
                bool                 ok = true;
                for (int64_t i = 0; i < n && ok; ++i) {
                    // Per x block of d_x = max|x| / 127: x is replaced by d_x q with |x - d_x q| <= (0.5 + 1e-4) d_x
                    // (the test above), an error of at most that times sum |w| over the block. Then the fp32
                    // combination: each block's integer sum scaled and added to one of 8 lanes (<= nb + 4 roundings,
                    // the lanes' sum 3 more, the bias add and the output's rounding 2), each at most u_32 of the
                    // sum of |x^| a_c (a_c = abs_terms: the magnitudes the integer path sums).
                    const float* xr = x.data() + i * k;
                    for (int64_t o = 0; o < m; ++o) {
                        const uint8_t* wrow = w.bytes.data() + size_t(o) * size_t(w.mat.row_bytes);
                        const auto     a    = abs_terms(t, wrow, k);
                        double         act = 0, mag = std::fabs(double(b[size_t(o)]));
                        for (int64_t bl = 0; bl < nb; ++bl) {
                            float amax = 0;
                            for (int64_t j = 0; j < be; ++j) amax = std::max(amax, std::fabs(xr[bl * be + j]));
                            const double dx = double(amax) / 127.0, sw = [&] {
                                double s = 0;
                                for (int64_t j = 0; j < be; ++j)
                                    s += std::fabs(double(w.decoded[size_t(o * k + bl * be + j)]));
                                return s;
                            }();
                            act += (0.5 + 1e-4) * dx * sw;
                            for (int64_t j = 0; j < be; ++j)
                                mag += (std::fabs(double(xr[bl * be + j])) + dx) * a[size_t(bl * be + j)];
                        }
                        const double tol = act + double(rounds) * test::kU32 * mag;
                        const double err = std::fabs(double(got[size_t(i * m + o)]) - double(ref[size_t(i * m + o)]));
                        if (!(err <= tol)) {
                            UNSCOPED_INFO("row " << i << " output " << o << " got " << got[size_t(i * m + o)] << " ref "
                                                 << ref[size_t(i * m + o)] << " tol " << tol);
                            ok = false;
                            break;
                        }
                    }
                }
                CHECK(ok);
                // The same products against the scalar reimplementation of the integer arithmetic: the same
                // activations (quantize_act_row) and exact integer block sums, so only the fp32 combination differs:
                // within `rounds` u_32 of the absolute sum (the roundings counted above).
                ok = true;
                for (int64_t i = 0; i < n && ok; ++i) {
                    cpu::quantize_act_row(t, x.data() + i * k, xq.data(), k);
                    for (int64_t o = 0; o < m; ++o) {
                        double       mag = 0;
                        const double v =
                            int_dot_ref(t, xq.data(), w.bytes.data() + size_t(o) * size_t(w.mat.row_bytes), k, &mag) +
                            double(b[size_t(o)]);
                        mag += std::fabs(double(b[size_t(o)]));
                        const double err = std::fabs(double(got[size_t(i * m + o)]) - v);
                        if (!(err <= double(rounds) * test::kU32 * mag)) {
                            UNSCOPED_INFO("row " << i << " output " << o << " got " << got[size_t(i * m + o)]
                                                 << " integer ref " << v);
                            ok = false;
                            break;
                        }
                    }
                }
                CHECK(ok);
            }
        }
    }
    cpu::quant_force_isa(cpu::QuantIsa::Auto);
    cpu::quant_force_path(cpu::QuantPath::Auto);
    if (!cpu::quant_amx_int8_available()) WARN("no AMX-INT8 on this CPU: its path was not checked here");
    CHECK((amx_int8_ran || !cpu::quant_amx_int8_available()));
}
