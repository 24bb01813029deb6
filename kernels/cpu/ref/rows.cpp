// Reference row gather/scatter, element by element through fp32 (exact for F32 and for same-type 16-bit copies,
// since widening is exact and narrowing an exactly representable value returns it unchanged).
#include "kernels/cpu/ref/rows.h"

namespace dyllm::cpu::ref {

namespace {
void store(void* row, ElemType t, int64_t c, float x) {
    switch (t) {
        case ElemType::F32:
            static_cast<float*>(row)[c] = x;
            break;
        case ElemType::F16:
            static_cast<uint16_t*>(row)[c] = f32_to_f16(x);
            break;
        case ElemType::BF16:
            static_cast<uint16_t*>(row)[c] = f32_to_bf16(x);
            break;
    }
}
void* row_of(void* base, ElemType t, int64_t ld, int64_t r) {
    return static_cast<char*>(base) + r * ld * int64_t(elem_size(t));
}
}  // namespace

void gather_rows(ConstMat src, const int32_t* idx, int64_t n_idx, void* dst, ElemType dst_type, int64_t dst_ld) {
    for (int64_t i = 0; i < n_idx; ++i)
        for (int64_t c = 0; c < src.cols; ++c) store(row_of(dst, dst_type, dst_ld, i), dst_type, c, src.at(idx[i], c));
}

void scatter_rows(ConstMat src, const int32_t* idx, int64_t n_idx, void* dst, ElemType dst_type, int64_t dst_ld) {
    for (int64_t i = 0; i < n_idx; ++i)
        for (int64_t c = 0; c < src.cols; ++c) store(row_of(dst, dst_type, dst_ld, idx[i]), dst_type, c, src.at(i, c));
}

}  // namespace dyllm::cpu::ref
