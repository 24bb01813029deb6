// Row conversions between F32/F16/BF16. The bf16 path is a 16-bit shift that the compiler vectorises; f16 goes
// through the shared scalar conversion (kernels/common/dtype_convert.h) so CPU and CUDA round identically.
#include "kernels/cpu/convert.h"

#include <cstring>

namespace dyllm::cpu {

void widen_row(const void* src, ElemType t, float* dst, int64_t n) {
    switch (t) {
        case ElemType::F32:
            std::memcpy(dst, src, size_t(n) * 4);
            return;
        case ElemType::BF16: {
            const uint16_t* s = static_cast<const uint16_t*>(src);
            uint32_t*       d = reinterpret_cast<uint32_t*>(dst);  // bf16 is the top half of an fp32
            for (int64_t i = 0; i < n; ++i) d[i] = uint32_t(s[i]) << 16;
            return;
        }
        case ElemType::F16: {
            const uint16_t* s = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
            return;
        }
    }
}

void narrow_row(const float* src, void* dst, ElemType t, int64_t n) {
    switch (t) {
        case ElemType::F32:
            std::memmove(dst, src, size_t(n) * 4);
            return;
        case ElemType::BF16: {
            uint16_t* d = static_cast<uint16_t*>(dst);
            for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
            return;
        }
        case ElemType::F16: {
            uint16_t* d = static_cast<uint16_t*>(dst);
            for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
            return;
        }
    }
}

void convert_row(const void* src, ElemType st, void* dst, ElemType dt, int64_t n) {
    if (st == dt) {
        if (src != dst) std::memmove(dst, src, size_t(n) * elem_size(st));
        return;
    }
    if (st == ElemType::F32) return narrow_row(static_cast<const float*>(src), dst, dt, n);
    if (dt == ElemType::F32) return widen_row(src, st, static_cast<float*>(dst), n);
    // F16 <-> BF16: through fp32 in small chunks (exact widening, one rounding).
    float tmp[256];
    for (int64_t i = 0; i < n; i += 256) {
        const int64_t c = n - i < 256 ? n - i : 256;
        widen_row(static_cast<const char*>(src) + i * 2, st, tmp, c);
        narrow_row(tmp, static_cast<char*>(dst) + i * 2, dt, c);
    }
}

}  // namespace dyllm::cpu
