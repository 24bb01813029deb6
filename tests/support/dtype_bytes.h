// Host bytes of float values in a storage dtype (F32, F16, BF16) and back: the tests' way to build weights and cache
// tensors of any dtype and read them back.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/tensor.h"
#include "kernels/common/dtype_convert.h"

namespace dyllm::test {

inline std::vector<uint8_t> encode(const std::vector<float>& v, DType dt) {
    std::vector<uint8_t> bytes(v.size() * dtype_size(dt));
    for (size_t i = 0; i < v.size(); ++i) {
        if (dt == DType::F32) {
            std::memcpy(bytes.data() + 4 * i, &v[i], 4);
        } else {
            const uint16_t h = dt == DType::BF16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
            std::memcpy(bytes.data() + 2 * i, &h, 2);
        }
    }
    return bytes;
}

inline std::vector<float> decode(const std::vector<uint8_t>& bytes, DType dt) {
    std::vector<float> v(bytes.size() / dtype_size(dt));
    for (size_t i = 0; i < v.size(); ++i) {
        if (dt == DType::F32) {
            std::memcpy(&v[i], bytes.data() + 4 * i, 4);
        } else {
            uint16_t h;
            std::memcpy(&h, bytes.data() + 2 * i, 2);
            v[i] = dt == DType::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
        }
    }
    return v;
}

}  // namespace dyllm::test
