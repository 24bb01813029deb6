// Reference rotate-half RoPE.
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu::ref {

// In place on every head of x: [n, n_head * head_dim]; pair (c, c + D/2) of row i rotates by positions[i] * inv_freq_c
// with inv_freq_c = theta^(-2c / D), angles and cos/sin in fp32 as HF computes them (kernels/common/scalar_math.h).
void rope(MatF x, const int32_t* positions, int n_head, int head_dim, float theta);

}  // namespace dyllm::cpu::ref
