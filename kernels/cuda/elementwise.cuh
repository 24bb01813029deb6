// Elementwise ops on [rows, cols] matrices of any storage type (fp32 math): add, sub, silu_mul and copy/convert.
#pragma once
#include <cuda_runtime_api.h>

#include "kernels/cuda/mat.cuh"

namespace dyllm::cuda {

// y = a + b, y = a - b (same shapes; y may alias a or b; each operand may be F32/BF16/F16, rounding on store).
cudaError_t add(const Mat& a, const Mat& b, const Mat& y, cudaStream_t stream);
cudaError_t sub(const Mat& a, const Mat& b, const Mat& y, cudaStream_t stream);
// y = silu(gate) * up (same shapes; y may alias gate).
cudaError_t silu_mul(const Mat& gate, const Mat& up, const Mat& y, cudaStream_t stream);
// dst = src, converting between storage types.
cudaError_t copy(const Mat& src, const Mat& dst, cudaStream_t stream);
// Every row of y = row (a [1, cols] matrix): the bias prefill of matmul.
cudaError_t broadcast_row(const Mat& row, const Mat& y, cudaStream_t stream);

}  // namespace dyllm::cuda
