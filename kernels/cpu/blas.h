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
// The kernel set OpenBLAS's DYNAMIC_ARCH picked for this CPU ("SkylakeX", "Cooperlake"; "Prescott" when it does not
// know the CPU, e.g. 0.3.21 on Emerald Rapids: SSE3 kernels at a fraction of the machine's rate).
std::string blas_core();

// Raw cblas_sgemm: y = alpha * a b^T + beta * y. a: [n, k]; b: [m, k]; y: [n, m] (row-major, strides from the views).
void sgemm_nt(CMatF a, CMatF b, MatF y, float alpha = 1.0f, float beta = 0.0f);

}  // namespace dyllm::cpu
