// RMSNorm's scale factor from a sum of squares, shared by the CPU ops and the CUDA rms_norm kernel.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/hd.h"

namespace dyllm {

// 1 / sqrt(mean(x^2) + eps) for a row of n elements whose squares sum to sumsq (fp32, as LLaDA/Dream compute it).
DYLLM_HD float rms_inv_scale(float sumsq, int64_t n, float eps) {
    return 1.0f / sqrtf(sumsq / float(n) + eps);
}

}  // namespace dyllm
