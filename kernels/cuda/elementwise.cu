// Elementwise kernels: one templated 2-D kernel (threads over columns, blocks over rows) instantiated per operation.
#include "kernels/common/scalar_math.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/elementwise.cuh"

namespace dyllm::cuda {

enum class Op { Add, Sub, SiluMul, Copy, BroadcastRow };

constexpr int kEltThreads = 256;

template <Op op>
__device__ __forceinline__ float apply(float a, float b) {
    if constexpr (op == Op::Add) return a + b;
    if constexpr (op == Op::Sub) return a - b;
    if constexpr (op == Op::SiluMul) return silu(a) * b;
    return a;  // Copy, BroadcastRow
}

// y[r, c] = op(a[r or 0, c], b[r, c]). b is unused for Copy/BroadcastRow.
template <Op op>
static __global__ void elementwise_kernel(Mat a, Mat b, Mat y) {
    for (int64_t r = blockIdx.y; r < y.rows; r += gridDim.y) {
        const int64_t ra = (op == Op::BroadcastRow) ? 0 : r;
        for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < y.cols;
             c += int64_t(gridDim.x) * blockDim.x) {
            const float va = mat_load(a, ra, c);
            const float vb = (op == Op::Add || op == Op::Sub || op == Op::SiluMul) ? mat_load(b, r, c) : 0.0f;
            mat_store(y, r, c, apply<op>(va, vb));
        }
    }
}

template <Op op>
static cudaError_t launch_elementwise(const Mat& a, const Mat& b, const Mat& y, cudaStream_t stream) {
    if (y.rows == 0 || y.cols == 0) return cudaSuccess;
    const dim3 grid(grid_for(y.cols, kEltThreads, 64), unsigned(y.rows < 65535 ? y.rows : 65535));
    elementwise_kernel<op><<<grid, kEltThreads, 0, stream>>>(a, b, y);
    return cudaGetLastError();
}

cudaError_t add(const Mat& a, const Mat& b, const Mat& y, cudaStream_t s) {
    return launch_elementwise<Op::Add>(a, b, y, s);
}
cudaError_t sub(const Mat& a, const Mat& b, const Mat& y, cudaStream_t s) {
    return launch_elementwise<Op::Sub>(a, b, y, s);
}
cudaError_t silu_mul(const Mat& gate, const Mat& up, const Mat& y, cudaStream_t s) {
    return launch_elementwise<Op::SiluMul>(gate, up, y, s);
}
cudaError_t copy(const Mat& src, const Mat& dst, cudaStream_t s) {
    return launch_elementwise<Op::Copy>(src, Mat{}, dst, s);
}
cudaError_t broadcast_row(const Mat& row, const Mat& y, cudaStream_t s) {
    return launch_elementwise<Op::BroadcastRow>(row, Mat{}, y, s);
}

}  // namespace dyllm::cuda
