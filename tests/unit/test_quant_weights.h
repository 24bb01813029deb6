// Random quantized weights for the quantized-product tests: W quantized row by row (cpu::quantize_row) with its
// decoded values beside it (cpu::dequantize_row), so a product can be checked against the fp64 reference.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/quant_type.h"
#include "kernels/cpu/ref/quant.h"
#include "test_kernels_util.h"

namespace dyllm::test {

struct QuantWeights {
    std::vector<uint8_t> bytes;
    std::vector<float>   decoded;
    cpu::QuantMat        mat;
};

// m x k uniform values in [-1, 1) from `seed`, stored as type t (k a multiple of t's block).
inline QuantWeights make_quant_weights(cpu::QuantType t, int64_t m, int64_t k, uint32_t seed) {
    QuantWeights w;
    const auto   v  = random_floats(size_t(m * k), seed);
    const size_t rb = cpu::quant_row_bytes(t, k);
    w.bytes.resize(std::max<size_t>(1, rb * size_t(m)));  // never empty: data() stays a valid pointer at m = 0
    w.decoded.resize(size_t(m * k));
    for (int64_t r = 0; r < m; ++r) {
        cpu::quantize_row(t, v.data() + r * k, w.bytes.data() + size_t(r) * rb, k);
        cpu::dequantize_row(t, w.bytes.data() + size_t(r) * rb, w.decoded.data() + r * k, k);
    }
    w.mat = cpu::QuantMat{w.bytes.data(), t, m, k, int64_t(rb)};
    return w;
}

}  // namespace dyllm::test
