// Reference add of gathered rows: y[i, :] += src[idx[i], :] (DyLLM adds the cached FFN output of its query rows to
// the residual stream this way).
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu::ref {

// y[i, c] += src[idx[i], c] for i < n_idx, c < src.cols (y: [n_idx, src.cols] fp32, row stride y_ld); src is widened
// to fp32 first, then one fp32 addition (the gather and add it replaces, exactly).
void add_rows(ConstMat src, const int32_t* idx, int64_t n_idx, float* y, int64_t y_ld);

}  // namespace dyllm::cpu::ref
