// Optimised rotate-half RoPE.
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu {

// In place on every head of x: [n, n_head * head_dim]; same angles as ref::rope (fp32, kernels/common/scalar_math.h).
void rope(MatF x, const int32_t* positions, int n_head, int head_dim, float theta);

}  // namespace dyllm::cpu
