// Host bytes of float values in a storage dtype (F32, F16, BF16) and back, and backend tensors filled from / read
// into such values: the tests' way to build weights and cache tensors of any dtype and read them back.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/backend.h"
#include "engine/errors.h"
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

// A [rows, cols] tensor of dtype dt on backend be holding v (rounded to dt).
inline Tensor upload_values(Backend& be, DType dt, int64_t rows, int64_t cols, const std::vector<float>& v) {
    DYLLM_ASSERT(v.size() == size_t(rows * cols), "upload_values: the value count does not match [rows, cols]");
    Tensor                     t     = be.alloc(dt, rows, cols);
    const std::vector<uint8_t> bytes = encode(v, dt);
    be.upload(t.view(), bytes.data());
    return t;
}

// The values a backend tensor holds, widened to fp32.
inline std::vector<float> download_values(Backend& be, const TensorView& t) {
    be.synchronize();
    std::vector<uint8_t> bytes(t.bytes());
    be.download(t, bytes.data());
    return decode(bytes, t.dtype);
}

}  // namespace dyllm::test
