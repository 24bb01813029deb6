// RMSNorm: one block per row; fp32 sum of squares reduced over the block, scale from the shared rms_inv_scale.
#include "kernels/common/rms_norm_math.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/rms_norm.cuh"

namespace dyllm::cuda {

constexpr int kRmsThreads = 256;

static __global__ void rms_norm_kernel(Mat x, Mat w, float eps, Mat y) {
    __shared__ float scratch[32];
    for (int64_t r = blockIdx.x; r < x.rows; r += gridDim.x) {
        float ss = 0.0f;
        for (int64_t c = threadIdx.x; c < x.cols; c += blockDim.x) {
            const float v = mat_load(x, r, c);
            ss += v * v;
        }
        const float scale = rms_inv_scale(block_sum(ss, scratch), x.cols, eps);
        // Every thread has read its own columns before writing them, so y may alias x.
        for (int64_t c = threadIdx.x; c < x.cols; c += blockDim.x)
            mat_store(y, r, c, mat_load(x, r, c) * scale * mat_load(w, 0, c));
    }
}

static cudaError_t launch_rms_norm(const Mat& x, const Mat& w, float eps, const Mat& y, cudaStream_t stream) {
    rms_norm_kernel<<<grid_for(x.rows, 1, 65535), kRmsThreads, 0, stream>>>(x, w, eps, y);
    return cudaGetLastError();
}

cudaError_t rms_norm(const Mat& x, const Mat& w, float eps, const Mat& y, cudaStream_t stream) {
    if (x.rows == 0) return cudaSuccess;
    return launch_rms_norm(x, w, eps, y, stream);
}

}  // namespace dyllm::cuda
