// Reference per-row cosine similarity (kernels/README.md §f.7).
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu::ref {

// cos_out[i] = a_i . b_i / (sqrt(max(|a_i|^2, 1e-8)) sqrt(max(|b_i|^2, 1e-8))) over all columns. a, b: [n, w].
void cosine_rows(CMatF a, CMatF b, float* cos_out);

}  // namespace dyllm::cpu::ref
