// Reference matrix product y = x W^T + b with fp64 accumulation.
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu::ref {

// x: [n, k] fp32; w: [m, k] (F32/F16/BF16); bias: [1, m] (any type) or bias.data == nullptr; y: [n, m] fp32.
void matmul(CMatF x, ConstMat w, ConstMat bias, MatF y);

}  // namespace dyllm::cpu::ref
