// Optimised add of gathered rows: a vectorisable fp32 loop per row for F32 sources, widening through the shared
// converters for 16-bit ones.
#include "kernels/cpu/add_rows.h"

#include "kernels/cpu/simd.h"

namespace dyllm::cpu {

DYLLM_CPU_CLONES void add_rows(ConstMat src, const int32_t* idx, int64_t n_idx, float* y, int64_t y_ld) {
    const int64_t w = src.cols;
    for (int64_t i = 0; i < n_idx; ++i) {
        float*      yr = y + i * y_ld;
        const void* sr = src.row_ptr(idx[i]);
        switch (src.type) {
            case ElemType::F32: {
                const float* s = static_cast<const float*>(sr);
                for (int64_t c = 0; c < w; ++c) yr[c] += s[c];
                break;
            }
            case ElemType::BF16: {
                const uint16_t* s = static_cast<const uint16_t*>(sr);
                for (int64_t c = 0; c < w; ++c) yr[c] += bf16_to_f32(s[c]);
                break;
            }
            case ElemType::F16: {
                const uint16_t* s = static_cast<const uint16_t*>(sr);
                for (int64_t c = 0; c < w; ++c) yr[c] += f16_to_f32(s[c]);
                break;
            }
        }
    }
}

}  // namespace dyllm::cpu
