// Optimised add of gathered rows: y[i, :] += src[idx[i], :], the gather and the residual add of a cached row in one
// pass (no [n, w] copy of the gathered rows).
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu {

// Contract of kernels/cpu/ref/add_rows.h: y[i, c] += src[idx[i], c] (src widened to fp32, one fp32 addition), so the
// result is bit-identical to gather_rows into fp32 followed by add. Indices in range (checked by the caller).
void add_rows(ConstMat src, const int32_t* idx, int64_t n_idx, float* y, int64_t y_ld);

}  // namespace dyllm::cpu
