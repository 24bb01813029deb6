// Thin wrappers over OpenBLAS (thread count, configuration string, sgemm with B transposed).
#include "kernels/cpu/blas.h"

#include <cblas.h>

namespace dyllm::cpu {

void blas_set_threads(int n) {
    openblas_set_num_threads(n < 1 ? 1 : n);
}
std::string blas_config() {
    return openblas_get_config();
}
std::string blas_core() {
    return openblas_get_corename();
}

void sgemm_nt(CMatF a, CMatF b, MatF y, float alpha, float beta) {
    if (y.rows == 0 || y.cols == 0) return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blasint(y.rows), blasint(y.cols), blasint(a.cols), alpha,
                a.data, blasint(a.ld), b.data, blasint(b.ld), beta, y.data, blasint(y.ld));
}

}  // namespace dyllm::cpu
