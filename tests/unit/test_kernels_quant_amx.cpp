// The AMX path of the quantized product (kernels/cpu/quant_amx.h): its decoded weights against dequantize_row rounded
// to bf16, its products against the fp64 reference within bf16 rounding, the same bits at any thread count and row
// count, and quant_matmul's choice of it. On a CPU (or OS) without AMX the cases say so and check nothing.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/common/dtype_convert.h"
#include "kernels/cpu/quant_amx.h"
#include "kernels/cpu/quant_amx_int8.h"
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

std::vector<float> run(const std::vector<float>& x, int64_t n, const QuantWeights& w, const float* bias, int threads,
                       bool f32_x = false) {
    const int64_t       m = w.mat.rows, k = w.mat.cols;
    cpu::ThreadPool     pool(threads);
    std::vector<float>  y(size_t(n * m));
    const cpu::ConstMat b{bias, cpu::ElemType::F32, 1, m, m};
    cpu::quant_matmul(cpu::CMatF{x.data(), n, k, k}, w.mat, bias ? b : cpu::ConstMat{}, cpu::MatF{y.data(), n, m, m},
                      pool, f32_x);
    return y;
}

bool amx_or_warn() {
    if (cpu::quant_amx_available()) return true;
    WARN("no AMX-BF16 on this CPU (or the OS refused the tile state): the AMX cases check nothing");
    return false;
}

// A path forced for one scope, Auto again after it.
struct ForcePath {
    explicit ForcePath(cpu::QuantPath p) { cpu::quant_force_path(p); }
    ~ForcePath() { cpu::quant_force_path(cpu::QuantPath::Auto); }
};

}  // namespace

TEST_CASE("the AMX path multiplies by dequantize_row's values rounded once to bf16", "[quant][amx]") {
    if (!amx_or_warn()) return;
    ForcePath force(cpu::QuantPath::Amx);
    for (QuantType t : kAllQuant) {
        // x = the identity: y[i, o] = bf16(w[o, i]) * 1 plus zeros, exact in the fp32 sums. k = 96 is three blocks of
        // the 32-element types; m = 33 leaves a panel 1 row deep.
        const int64_t k = cpu::quant_block_elems(t) == 32 ? 96 : 512, m = 33;
        INFO(cpu::quant_name(t) << " k " << k);
        const QuantWeights w = make_quant_weights(t, m, k, 3);
        std::vector<float> x(size_t(k * k), 0.0f);
        for (int64_t i = 0; i < k; ++i) x[size_t(i * k + i)] = 1.0f;
        const auto y  = run(x, k, w, nullptr, 2);
        bool       ok = true;
        for (int64_t i = 0; i < k && ok; ++i)
            for (int64_t o = 0; o < m; ++o) {
                const float want = round_to_bf16(w.decoded[size_t(o * k + i)]);
                if (y[size_t(i * m + o)] != want) {
                    UNSCOPED_INFO("element " << i << " of row " << o << ": " << y[size_t(i * m + o)] << ", want "
                                             << want);
                    ok = false;
                    break;
                }
            }
        CHECK(ok);
    }
}

TEST_CASE("the AMX path decodes blocks of any bytes exactly", "[quant][amx]") {
    if (!amx_or_warn()) return;
    ForcePath    force(cpu::QuantPath::Amx);
    std::mt19937 rng(11);
    // Any finite fp16 scale, of either sign, subnormals and zeros included: random bits with the exponent below 31.
    auto finite_f16 = [&] {
        uint16_t h;
        do h = uint16_t(rng());
        while (((h >> 10) & 31) == 31);
        return h;
    };
    for (QuantType t : kAllQuant) {
        // Random bytes reach every level, every scale (Q6_K's -128 too) and every high bit, unlike quantized data.
        const int64_t k = cpu::quant_block_elems(t) == 32 ? 96 : 512, m = 33, be = cpu::quant_block_elems(t);
        INFO(cpu::quant_name(t) << " k " << k);
        const size_t         rb = cpu::quant_row_bytes(t, k);
        std::vector<uint8_t> bytes(rb * size_t(m));
        for (uint8_t& v : bytes) v = uint8_t(rng());
        for (int64_t r = 0; r < m; ++r)
            for (int64_t i = 0; i < k / be; ++i) {
                uint8_t* blk = bytes.data() + size_t(r) * rb + size_t(i) * (rb / size_t(k / be));
                switch (t) {
                    case QuantType::Q8_0:
                        reinterpret_cast<cpu::BlockQ8_0*>(blk)->d = finite_f16();
                        break;
                    case QuantType::Q4_0:
                        reinterpret_cast<cpu::BlockQ4_0*>(blk)->d = finite_f16();
                        break;
                    case QuantType::Q4_K:
                        reinterpret_cast<cpu::BlockQ4_K*>(blk)->d    = finite_f16();
                        reinterpret_cast<cpu::BlockQ4_K*>(blk)->dmin = finite_f16();
                        break;
                    case QuantType::Q5_K:
                        reinterpret_cast<cpu::BlockQ5_K*>(blk)->d    = finite_f16();
                        reinterpret_cast<cpu::BlockQ5_K*>(blk)->dmin = finite_f16();
                        break;
                    case QuantType::Q6_K:
                        reinterpret_cast<cpu::BlockQ6_K*>(blk)->d = finite_f16();
                        break;
                }
            }
        QuantWeights w;
        w.decoded.resize(size_t(m * k));
        for (int64_t r = 0; r < m; ++r)
            cpu::dequantize_row(t, bytes.data() + size_t(r) * rb, w.decoded.data() + r * k, k);
        w.mat = cpu::QuantMat{bytes.data(), t, m, k, int64_t(rb)};
        // x = the identity, as above: y[i, o] = bf16(w[o, i]).
        std::vector<float> x(size_t(k * k), 0.0f);
        for (int64_t i = 0; i < k; ++i) x[size_t(i * k + i)] = 1.0f;
        const auto y  = run(x, k, w, nullptr, 2);
        bool       ok = true;
        for (int64_t i = 0; i < k && ok; ++i)
            for (int64_t o = 0; o < m; ++o) {
                const float want = round_to_bf16(w.decoded[size_t(o * k + i)]);
                if (y[size_t(i * m + o)] != want) {
                    UNSCOPED_INFO("element " << i << " of row " << o << ": " << y[size_t(i * m + o)] << ", want "
                                             << want);
                    ok = false;
                    break;
                }
            }
        CHECK(ok);
    }
}

TEST_CASE("the AMX path matches the fp64 reference within bf16 rounding", "[quant][amx]") {
    if (!amx_or_warn()) return;
    ForcePath force(cpu::QuantPath::Amx);
    // n: 1, around one and two x tiles (16 rows), more than a pass of 3 tiles; m: 1, odd, more than one task (64 rows);
    // k: three 32-element blocks (Q8_0 / Q4_0 only), one super-block, odd super-block counts, a long row.
    const int64_t shapes[][3] = {{1, 1, 256},     {15, 7, 768},  {17, 33, 512}, {33, 130, 256},
                                 {100, 19, 1280}, {5, 70, 4096}, {33, 17, 96}};
    for (QuantType t : kAllQuant)
        for (const auto& sh : shapes)
            for (bool with_bias : {false, true}) {
                const int64_t n = sh[0], m = sh[1], k = sh[2];
                if (k % cpu::quant_block_elems(t) != 0) continue;
                INFO(cpu::quant_name(t) << " n " << n << " m " << m << " k " << k << (with_bias ? " bias" : ""));
                const QuantWeights  w   = make_quant_weights(t, m, k, uint32_t(n * 7 + m));
                const auto          x   = test::random_floats(size_t(n * k), 5);
                const auto          b   = test::random_floats(size_t(m), 6);
                const auto          got = run(x, n, w, with_bias ? b.data() : nullptr, 2);
                std::vector<float>  ref(got.size());
                const cpu::ConstMat bias{b.data(), cpu::ElemType::F32, 1, m, m};
                cpu::ref::quant_matmul(cpu::CMatF{x.data(), n, k, k}, w.mat, with_bias ? bias : cpu::ConstMat{},
                                       cpu::MatF{ref.data(), n, m, m});
                // x and w each rounded to bf16 (8 significant bits, relative error <= u_bf16 = 2^-8 each): a
                // product is off by at most (2 u_bf16 + u_bf16^2) |x w|. The fp32 sums of k exact bf16 products
                // (whatever order TDPBF16PS adds them in) and the bias add: at most (k + 2) u_32 of the rounded
                // products' and the bias's magnitudes, (1 + 2^-7) sum |x w| + |b|.
                const double ub = 1.0 / 256.0;
                bool         ok = true;
                for (int64_t i = 0; i < n && ok; ++i)
                    for (int64_t o = 0; o < m; ++o) {
                        double s = 0;
                        for (int64_t c = 0; c < k; ++c)
                            s += std::fabs(double(x[size_t(i * k + c)]) * double(w.decoded[size_t(o * k + c)]));
                        const double bb = with_bias ? std::fabs(double(b[size_t(o)])) : 0.0;
                        const double tol =
                            (2 * ub + ub * ub) * s + double(k + 2) * test::kU32 * ((1 + 2 * ub) * s + bb);
                        const double err = std::fabs(double(got[size_t(i * m + o)]) - double(ref[size_t(i * m + o)]));
                        if (!(err <= tol)) {
                            UNSCOPED_INFO("row " << i << " output " << o << " got " << got[size_t(i * m + o)] << " ref "
                                                 << ref[size_t(i * m + o)] << " tol " << tol);
                            ok = false;
                            break;
                        }
                    }
                CHECK(ok);
            }
}

TEST_CASE("the AMX path gives the same bits at any thread count and row count", "[quant][amx]") {
    if (!amx_or_warn()) return;
    ForcePath     force(cpu::QuantPath::Amx);
    const int64_t n = 50, m = 100, k = 1024;
    for (QuantType t : kAllQuant) {
        INFO(cpu::quant_name(t));
        const QuantWeights w   = make_quant_weights(t, m, k, 21);
        const auto         x   = test::random_floats(size_t(n * k), 22);
        const auto         one = run(x, n, w, nullptr, 1);
        CHECK(run(x, n, w, nullptr, 2) == one);
        CHECK(run(x, n, w, nullptr, 3) == one);
        // Each output is its own W row against its own x row, whatever else the tiles hold.
        const auto first17 = run(std::vector<float>(x.begin(), x.begin() + 17 * k), 17, w, nullptr, 3);
        CHECK(std::equal(first17.begin(), first17.end(), one.begin()));
    }
}

TEST_CASE("quant_matmul takes the AMX path from its row threshold, never under f32 compute", "[quant][amx]") {
    if (!amx_or_warn()) return;
    const int64_t m = 40, k = 512;
    for (QuantType t : kAllQuant) {
        // Below the AMX-INT8 path's limit that path runs instead (the next case).
        const int64_t int8_rows = cpu::quant_amx_int8_available() ? cpu::quant_amx_int8_max_rows(t) : 0;
        const int64_t n         = std::max<int64_t>({cpu::quant_amx_min_rows(t), int8_rows + 1, 1});
        if (n > 256) continue;  // never chosen for this type
        INFO(cpu::quant_name(t) << " n " << n);
        const QuantWeights w = make_quant_weights(t, m, k, 31);
        const auto         x = test::random_floats(size_t(n * k), 32);
        std::vector<float> amx, decode;
        {
            ForcePath force(cpu::QuantPath::Amx);
            amx = run(x, n, w, nullptr, 2);
            // --compute f32 keeps x in fp32: the decode path, whatever is forced.
            const auto f32 = run(x, n, w, nullptr, 2, true);
            ForcePath  dec(cpu::QuantPath::Decode);
            decode = run(x, n, w, nullptr, 2);
            CHECK(f32 == decode);
        }
        CHECK(run(x, n, w, nullptr, 2) == amx);
    }
}

TEST_CASE("quant_matmul takes the AMX-INT8 path within its row limits, never under f32 compute", "[quant][amx]") {
    if (!cpu::quant_amx_int8_available()) {
        WARN("no AMX-INT8 on this CPU (or the OS refused the tile state): this case checks nothing");
        return;
    }
    const int64_t m = 70, k = 512;
    for (QuantType t : kAllQuant) {
        const int64_t top = cpu::quant_amx_int8_max_rows(t);
        if (top == 0) continue;
        for (int64_t n : {cpu::quant_amx_int8_min_rows(t), top}) {
            INFO(cpu::quant_name(t) << " n " << n);
            const QuantWeights w = make_quant_weights(t, m, k, 41);
            const auto         x = test::random_floats(size_t(n * k), 42);
            std::vector<float> int8, dot;
            {
                ForcePath force(cpu::QuantPath::AmxInt8);
                int8 = run(x, n, w, nullptr, 2);
                // Each output is one task's panel summed over k in a fixed order: the same bits at any thread count.
                CHECK(run(x, n, w, nullptr, 1) == int8);
                CHECK(run(x, n, w, nullptr, 3) == int8);
                const auto f32 = run(x, n, w, nullptr, 2, true);
                ForcePath  dec(cpu::QuantPath::Decode);
                CHECK(f32 == run(x, n, w, nullptr, 2));
                ForcePath force_dot(cpu::QuantPath::Dot);
                dot = run(x, n, w, nullptr, 2);
            }
            CHECK(run(x, n, w, nullptr, 2) == int8);
            CHECK(int8 != dot);  // a path of its own: the sums are combined in another order
        }
    }
}
