// Reference RMSNorm.
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu::ref {

// y = x * rsqrt(mean(x^2) + eps) * w. x, y: [n, d] (may alias); w: [1, d] any type.
void rms_norm(CMatF x, ConstMat w, float eps, MatF y);

}  // namespace dyllm::cpu::ref
