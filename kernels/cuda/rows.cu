// Row gather/scatter: blocks over the listed rows, threads over columns.
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/rows.cuh"

namespace dyllm::cuda {

constexpr int kRowThreads = 256;

// kScatter false: dst[i] = src[idx[i]]; true: dst[idx[i]] = src[i]. n = number of listed rows.
template <bool kScatter>
static __global__ void rows_kernel(Mat src, const int32_t* idx, int64_t n, Mat dst) {
    const int64_t cols = kScatter ? src.cols : dst.cols;
    for (int64_t i = blockIdx.y; i < n; i += gridDim.y) {
        const int64_t rs = kScatter ? i : idx[i];
        const int64_t rd = kScatter ? idx[i] : i;
        for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < cols; c += int64_t(gridDim.x) * blockDim.x)
            mat_store(dst, rd, c, mat_load(src, rs, c));
    }
}

template <bool kScatter>
static cudaError_t launch_rows(const Mat& src, const int32_t* idx, int64_t n, const Mat& dst, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    const int64_t cols = kScatter ? src.cols : dst.cols;
    const dim3    grid(grid_for(cols, kRowThreads, 64), unsigned(n < 65535 ? n : 65535));
    rows_kernel<kScatter><<<grid, kRowThreads, 0, stream>>>(src, idx, n, dst);
    return cudaGetLastError();
}

cudaError_t gather_rows(const Mat& src, const int32_t* idx, const Mat& dst, cudaStream_t stream) {
    return launch_rows<false>(src, idx, dst.rows, dst, stream);
}

cudaError_t scatter_rows(const Mat& src, const int32_t* idx, const Mat& dst, cudaStream_t stream) {
    return launch_rows<true>(src, idx, src.rows, dst, stream);
}

}  // namespace dyllm::cuda
