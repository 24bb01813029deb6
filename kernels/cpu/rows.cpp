// Optimised gather/scatter: one convert_row (a memcpy for equal types) per row.
#include "kernels/cpu/rows.h"

#include "kernels/cpu/convert.h"

namespace dyllm::cpu {

namespace {
void* row_of(void* base, ElemType t, int64_t ld, int64_t r) {
    return static_cast<char*>(base) + r * ld * int64_t(elem_size(t));
}
}  // namespace

void gather_rows(ConstMat src, const int32_t* idx, int64_t n_idx, void* dst, ElemType dst_type, int64_t dst_ld) {
    for (int64_t i = 0; i < n_idx; ++i)
        convert_row(src.row_ptr(idx[i]), src.type, row_of(dst, dst_type, dst_ld, i), dst_type, src.cols);
}

void scatter_rows(ConstMat src, const int32_t* idx, int64_t n_idx, void* dst, ElemType dst_type, int64_t dst_ld) {
    for (int64_t i = 0; i < n_idx; ++i)
        convert_row(src.row_ptr(i), src.type, row_of(dst, dst_type, dst_ld, idx[i]), dst_type, src.cols);
}

}  // namespace dyllm::cpu
