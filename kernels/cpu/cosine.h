// Optimised per-row cosine similarity (kernels/README.md §f.7).
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu {

// cos_out[i] from fp32 statistics (dot, |a_i|^2, |b_i|^2) through kernels/common's cosine_from_stats (1e-8 clamps).
void cosine_rows(CMatF a, CMatF b, float* cos_out);

}  // namespace dyllm::cpu
