// cuBLAS GEMM wrapper: converts the fp32 activation to the weight's 16-bit type (RNE, as the reference's bf16
// activations), prefills y with the bias, then one cublasGemmEx with CUBLAS_COMPUTE_32F (fp32 accumulation).
#include <cublas_v2.h>

#include "kernels/cuda/cublas_gemm.cuh"
#include "kernels/cuda/elementwise.cuh"

namespace dyllm::cuda {

size_t matmul_scratch_bytes(int64_t x_rows, int64_t x_cols, ElemType w_type) {
    return w_type == ElemType::F32 ? 0 : size_t(x_rows) * size_t(x_cols) * 2;
}

static cudaDataType_t cuda_type(ElemType t) {
    switch (t) {
        case ElemType::F32:
            return CUDA_R_32F;
        case ElemType::F16:
            return CUDA_R_16F;
        case ElemType::BF16:
            return CUDA_R_16BF;
    }
    return CUDA_R_32F;
}

cublasStatus_t matmul(cublasHandle_t handle, const Mat& x, const Mat& w, const Mat& bias, const Mat& y, void* scratch,
                      cudaStream_t stream) {
    const int64_t n = x.rows, k = x.cols, m = w.rows;
    if (n == 0 || m == 0) return CUBLAS_STATUS_SUCCESS;
    // The bias prefill makes the GEMM's beta = 1 add x W^T onto it; without a bias y starts from beta = 0.
    float beta = 0.0f;
    if (bias.data) {
        if (broadcast_row(bias, y, stream) != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
        beta = 1.0f;
    }
    if (k == 0) {  // empty inner dimension: y = bias or 0
        if (!bias.data &&
            cudaMemset2DAsync(y.data, size_t(y.ld) * 4, 0, size_t(m) * 4, size_t(n), stream) != cudaSuccess)
            return CUBLAS_STATUS_EXECUTION_FAILED;
        return CUBLAS_STATUS_SUCCESS;
    }
    Mat xin = x;
    if (w.type != ElemType::F32) {
        xin = Mat{scratch, w.type, n, k, k};
        if (copy(x, xin, stream) != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    // Row-major y[n, m] = x[n, k] w[m, k]^T is column-major y^T (m x n) = w_cm^T (m x k) * x_cm (k x n), where the
    // column-major views of row-major w and x are w_cm (k x m, ld = w.ld) and x_cm (k x n, ld = xin.ld).
    const float alpha = 1.0f;
    return cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, int(m), int(n), int(k), &alpha, w.data, cuda_type(w.type),
                        int(w.ld), xin.data, cuda_type(xin.type), int(xin.ld), &beta, y.data, CUDA_R_32F, int(y.ld),
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

}  // namespace dyllm::cuda
