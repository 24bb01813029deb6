// The OpenBLAS entry points the rest of the project needs, behind plain functions so that only kernels/cpu sees
// cblas.h (OpenBLAS is a private dependency of dyllm_kernels).
#pragma once
#include <string>

#include "kernels/cpu/mat.h"

namespace dyllm::cpu {

// Sets OpenBLAS's thread count (process-wide: the library has one pool).
void blas_set_threads(int n);
// "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64" (openblas_get_config()).
std::string blas_config();

// Raw cblas_sgemm: y = alpha * a b^T + beta * y. a: [n, k]; b: [m, k]; y: [n, m] (row-major, strides from the views).
void sgemm_nt(CMatF a, CMatF b, MatF y, float alpha = 1.0f, float beta = 0.0f);

}  // namespace dyllm::cpu
