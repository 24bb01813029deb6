// Optimised row gather and scatter (with storage-type conversion).
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu {

// dst[i, :] = src[idx[i], :] (dst: [n_idx, w]) and dst[idx[i], :] = src[i, :] (src: [n_idx, w]); indices in range
// (checked by the caller). Rows are converted when the element types differ.
void gather_rows(ConstMat src, const int32_t* idx, int64_t n_idx, void* dst, ElemType dst_type, int64_t dst_ld);
void scatter_rows(ConstMat src, const int32_t* idx, int64_t n_idx, void* dst, ElemType dst_type, int64_t dst_ld);

}  // namespace dyllm::cpu
