// Reference row gather and scatter.
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu::ref {

// dst[i, :] = src[idx[i], :] for i < n_idx (dst: [n_idx, w]); element types may differ (converted through fp32).
void gather_rows(ConstMat src, const int32_t* idx, int64_t n_idx, void* dst, ElemType dst_type, int64_t dst_ld);
// dst[idx[i], :] = src[i, :] for i < n_idx (src: [n_idx, w]).
void scatter_rows(ConstMat src, const int32_t* idx, int64_t n_idx, void* dst, ElemType dst_type, int64_t dst_ld);

}  // namespace dyllm::cpu::ref
