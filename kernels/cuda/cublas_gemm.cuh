// Matmul on CUDA through cuBLAS: y = x W^T (+ bias), bf16/f16 inputs with fp32 accumulation and fp32 output.
#pragma once
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/cuda/mat.cuh"

namespace dyllm::cuda {

// Bytes of scratch matmul needs for an x of this shape and a weight of this storage type (x converted to the
// weight's 16-bit type; none for F32 weights).
size_t matmul_scratch_bytes(int64_t x_rows, int64_t x_cols, ElemType w_type);

// x: [n, k] F32; w: [m, k] BF16, F16 or F32 (row-major, HF [out, in]); bias: [1, m] any type or data == nullptr;
// y: [n, m] F32, must not alias x. scratch: matmul_scratch_bytes() device bytes. The handle must be bound to
// `stream`. Returns the first failing cuBLAS status (launch errors of the conversion kernels are left in
// cudaGetLastError for the caller to check).
cublasStatus_t matmul(cublasHandle_t handle, const Mat& x, const Mat& w, const Mat& bias, const Mat& y, void* scratch,
                      cudaStream_t stream);

}  // namespace dyllm::cuda
