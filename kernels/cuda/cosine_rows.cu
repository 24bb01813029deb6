// Cosine rows: one block per row, three block reductions in fp32.
#include "kernels/common/scalar_math.h"
#include "kernels/cuda/cosine_rows.cuh"
#include "kernels/cuda/device_util.cuh"

namespace dyllm::cuda {

constexpr int kCosThreads = 256;

static __global__ void cosine_rows_kernel(Mat a, Mat b, float* cos_out, float* stats_out) {
    __shared__ float scratch[32];
    for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
        float dot = 0.0f, na = 0.0f, nb = 0.0f;
        for (int64_t c = threadIdx.x; c < a.cols; c += blockDim.x) {
            const float x = mat_load(a, r, c), y = mat_load(b, r, c);
            dot += x * y;
            na += x * x;
            nb += y * y;
        }
        dot = block_sum(dot, scratch);
        na  = block_sum(na, scratch);
        nb  = block_sum(nb, scratch);
        if (threadIdx.x == 0) {
            cos_out[r] = cosine_from_stats(dot, na, nb);
            if (stats_out) {
                stats_out[3 * r + 0] = dot;
                stats_out[3 * r + 1] = na;
                stats_out[3 * r + 2] = nb;
            }
        }
    }
}

static cudaError_t launch_cosine_rows(const Mat& a, const Mat& b, float* cos_out, float* stats_out,
                                      cudaStream_t stream) {
    cosine_rows_kernel<<<grid_for(a.rows, 1, 65535), kCosThreads, 0, stream>>>(a, b, cos_out, stats_out);
    return cudaGetLastError();
}

cudaError_t cosine_rows(const Mat& a, const Mat& b, float* cos_out, float* stats_out, cudaStream_t stream) {
    if (a.rows == 0) return cudaSuccess;
    return launch_cosine_rows(a, b, cos_out, stats_out, stream);
}

}  // namespace dyllm::cuda
