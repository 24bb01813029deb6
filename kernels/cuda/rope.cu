// RoPE: one thread per (row, head, pair); the angle and the rotation come from kernels/common (shared with the CPU).
#include "kernels/common/rope_math.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/rope.cuh"

namespace dyllm::cuda {

static __global__ void rope_kernel(Mat x, const int32_t* positions, int n_head, int head_dim, const float* inv_freq) {
    const int     half    = head_dim / 2;
    const int64_t per_row = int64_t(n_head) * half;
    const int64_t total   = x.rows * per_row;
    for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r  = t / per_row;
        const int     h  = int((t % per_row) / half);
        const int     c  = int(t % half);
        float*        xh = static_cast<float*>(x.data) + r * x.ld + int64_t(h) * head_dim;
        float         a  = rope_angle(positions[r], inv_freq[c]);
        float         s, co;
        sincosf(a, &s, &co);
        rope_rotate_pair(xh[c], xh[c + half], co, s);
    }
}

static cudaError_t launch_rope(const Mat& x, const int32_t* positions, int n_head, int head_dim, const float* inv_freq,
                               cudaStream_t stream) {
    constexpr int kThreads = 256;
    rope_kernel<<<grid_for(x.rows * n_head * (head_dim / 2), kThreads), kThreads, 0, stream>>>(x, positions, n_head,
                                                                                               head_dim, inv_freq);
    return cudaGetLastError();
}

cudaError_t rope(const Mat& x, const int32_t* positions, int n_head, int head_dim, const float* inv_freq,
                 cudaStream_t stream) {
    if (x.rows == 0 || head_dim < 2) return cudaSuccess;
    return launch_rope(x, positions, n_head, head_dim, inv_freq, stream);
}

}  // namespace dyllm::cuda
