// Add of gathered rows: blocks over the listed rows, threads over columns (the shape of rows.cu).
#include "kernels/cuda/add_rows.cuh"
#include "kernels/cuda/device_util.cuh"

namespace dyllm::cuda {

constexpr int kAddRowsThreads = 256;

static __global__ void add_rows_kernel(Mat src, const int32_t* idx, Mat y) {
    for (int64_t i = blockIdx.y; i < y.rows; i += gridDim.y) {
        const int64_t rs     = idx[i];
        const int64_t stride = int64_t(gridDim.x) * blockDim.x;
        for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < y.cols; c += stride)
            mat_store(y, i, c, mat_load(y, i, c) + mat_load(src, rs, c));
    }
}

cudaError_t add_rows(const Mat& src, const int32_t* idx, const Mat& y, cudaStream_t stream) {
    if (y.rows == 0) return cudaSuccess;
    const dim3 grid(grid_for(y.cols, kAddRowsThreads, 64), unsigned(y.rows < 65535 ? y.rows : 65535));
    add_rows_kernel<<<grid, kAddRowsThreads, 0, stream>>>(src, idx, y);
    return cudaGetLastError();
}

}  // namespace dyllm::cuda
