// bf16/f16 <-> fp32 conversions of kernels/common/dtype_convert.h: exhaustive round trips of every 16-bit pattern,
// round-to-nearest-even against an independent nearest-value search, ties, overflow, NaN, infinities, subnormals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/common/dtype_convert.h"

using namespace dyllm;

namespace {

bool is_nan16(uint16_t h, bool bf16) {
    return bf16 ? ((h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0) : ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0);
}

// All positive finite values of a 16-bit format in increasing order (pattern order is value order for positives),
// plus the "next" value past the largest finite one, which RNE rounds to infinity (IEEE 754 overflow rule).
struct Format {
    bool                  bf16;
    std::vector<double>   value;
    std::vector<uint16_t> bits;
};

Format make_format(bool bf16) {
    Format         f{bf16, {}, {}};
    const uint16_t inf = bf16 ? 0x7f80u : 0x7c00u;
    for (uint32_t h = 0; h < inf; ++h) {
        f.bits.push_back(uint16_t(h));
        f.value.push_back(bf16 ? double(bf16_to_f32(uint16_t(h))) : double(f16_to_f32(uint16_t(h))));
    }
    const double ulp = f.value.back() - f.value[f.value.size() - 2];
    f.bits.push_back(inf);
    f.value.push_back(f.value.back() + ulp);
    return f;
}

// Nearest representable value to x (finite), ties to the even pattern: an independent reference for RNE.
uint16_t nearest(const Format& f, float x) {
    const uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
    const double   a    = std::fabs(double(x));
    if (a >= f.value.back()) return uint16_t(sign | f.bits.back());
    const size_t hi = size_t(std::lower_bound(f.value.begin(), f.value.end(), a) - f.value.begin());
    if (f.value[hi] == a) return uint16_t(sign | f.bits[hi]);
    const size_t lo = hi - 1;
    const double dl = a - f.value[lo], dh = f.value[hi] - a;
    size_t       pick;
    if (dl < dh)
        pick = lo;
    else if (dh < dl)
        pick = hi;
    else
        pick = (f.bits[lo] & 1u) == 0 ? lo : hi;
    return uint16_t(sign | f.bits[pick]);
}

float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

}  // namespace

TEST_CASE("every bf16 and f16 pattern round-trips through fp32", "[dtype]") {
    for (uint32_t h = 0; h < 65536; ++h) {
        const uint16_t b = uint16_t(h);
        if (is_nan16(b, true)) {
            REQUIRE(std::isnan(bf16_to_f32(b)));
            REQUIRE(is_nan16(f32_to_bf16(bf16_to_f32(b)), true));
        } else {
            REQUIRE(f32_to_bf16(bf16_to_f32(b)) == b);
        }
        if (is_nan16(b, false)) {
            REQUIRE(std::isnan(f16_to_f32(b)));
            REQUIRE(is_nan16(f32_to_f16(f16_to_f32(b)), false));
        } else {
            REQUIRE(f32_to_f16(f16_to_f32(b)) == b);
        }
    }
}

TEST_CASE("fp32 -> bf16/f16 rounds to nearest even (random patterns vs a nearest-value search)", "[dtype]") {
    const Format    bf = make_format(true), hf = make_format(false);
    std::mt19937_64 rng(1234);
    for (int i = 0; i < 300000; ++i) {
        const uint32_t u = uint32_t(rng());
        const float    x = from_bits(u);
        if (std::isnan(x)) continue;
        if (std::isinf(x)) continue;
        INFO("bits " << u);
        REQUIRE(f32_to_bf16(x) == nearest(bf, x));
        REQUIRE(f32_to_f16(x) == nearest(hf, x));
    }
    // Values inside f16's range (random patterns mostly over/underflow it).
    std::uniform_real_distribution<float> d(-70000.0f, 70000.0f);
    std::uniform_real_distribution<float> small(-1e-4f, 1e-4f);
    for (int i = 0; i < 200000; ++i) {
        const float x = (i % 2) ? d(rng) : small(rng);
        INFO("x " << x);
        REQUIRE(f32_to_f16(x) == nearest(hf, x));
        REQUIRE(f32_to_bf16(x) == nearest(bf, x));
    }
}

TEST_CASE("rounding ties go to the even mantissa", "[dtype]") {
    // bf16 has 7 mantissa bits: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7.
    CHECK(f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80u);             // -> 1.0 (even)
    CHECK(f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82u);         // -> 1 + 2^-6 (even)
    CHECK(f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81u);  // just above half: up
    // f16 has 10 mantissa bits: 1 + 2^-11 is halfway.
    CHECK(f32_to_f16(1.0f + 0x1p-11f) == 0x3c00u);
    CHECK(f32_to_f16(1.0f + 3 * 0x1p-11f) == 0x3c02u);
    // f16 overflow: 65504 is the largest finite, 65520 is the halfway point to 2^16 and rounds to inf (even).
    CHECK(f32_to_f16(65504.0f) == 0x7bffu);
    CHECK(f32_to_f16(65519.99f) == 0x7bffu);
    CHECK(f32_to_f16(65520.0f) == 0x7c00u);
    CHECK(f32_to_f16(-1e9f) == 0xfc00u);
    // bf16 overflow: the largest finite fp32 rounds up to inf (its top-half rounding carries into the exponent).
    CHECK(f32_to_bf16(std::numeric_limits<float>::max()) == 0x7f80u);
}

TEST_CASE("infinities, NaN, signed zero", "[dtype]") {
    const float inf = std::numeric_limits<float>::infinity();
    CHECK(f32_to_bf16(inf) == 0x7f80u);
    CHECK(f32_to_bf16(-inf) == 0xff80u);
    CHECK(f32_to_f16(inf) == 0x7c00u);
    CHECK(f32_to_f16(-inf) == 0xfc00u);
    CHECK(std::isinf(bf16_to_f32(0x7f80u)));
    CHECK(std::isinf(f16_to_f32(0xfc00u)));
    CHECK(f16_to_f32(0xfc00u) < 0);
    const float qnan = std::numeric_limits<float>::quiet_NaN();
    const float snan = from_bits(0x7f800001u);  // a NaN whose payload would truncate to the inf pattern
    CHECK(is_nan16(f32_to_bf16(qnan), true));
    CHECK(is_nan16(f32_to_bf16(snan), true));
    CHECK(is_nan16(f32_to_f16(qnan), false));
    CHECK(is_nan16(f32_to_f16(snan), false));
    CHECK(f32_to_bf16(-0.0f) == 0x8000u);
    CHECK(f32_to_f16(-0.0f) == 0x8000u);
    CHECK(std::signbit(f16_to_f32(0x8000u)));
    CHECK(std::signbit(bf16_to_f32(0x8000u)));
}

TEST_CASE("subnormals", "[dtype]") {
    // f16 subnormals widen exactly: k * 2^-24.
    CHECK(f16_to_f32(0x0001u) == 0x1p-24f);
    CHECK(f16_to_f32(0x03ffu) == 1023 * 0x1p-24f);
    CHECK(f16_to_f32(0x8200u) == -512 * 0x1p-24f);
    // fp32 -> f16 near the bottom: 2^-25 is halfway between 0 and 2^-24 -> 0 (even); a bit more -> 2^-24.
    CHECK(f32_to_f16(0x1p-25f) == 0x0000u);
    CHECK(f32_to_f16(0x1p-25f * 1.0001f) == 0x0001u);
    CHECK(f32_to_f16(3 * 0x1p-25f) == 0x0002u);  // 1.5 * 2^-24: halfway between 1 and 2 -> 2 (even)
    CHECK(f32_to_f16(1e-10f) == 0x0000u);
    // Largest subnormal to smallest normal carry: (1024 - 0.5) * 2^-24 rounds to 2^-14 (0x0400).
    CHECK(f32_to_f16(1023.5f * 0x1p-24f) == 0x0400u);
    // fp32 subnormals keep their value in bf16 when representable (bf16 shares fp32's exponent range).
    CHECK(bf16_to_f32(f32_to_bf16(0x1p-130f)) == 0x1p-130f);
    CHECK(f32_to_bf16(0x1p-149f) == 0x0000u);  // far below half a bf16 subnormal ulp (2^-133)
    CHECK(bf16_to_f32(0x0001u) == 0x1p-133f);
}
