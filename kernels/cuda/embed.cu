// Embedding gather: one block row per token, threads over the embedding columns.
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/embed.cuh"

namespace dyllm::cuda {

static __global__ void embed_kernel(Mat table, const int32_t* ids, Mat out) {
    for (int64_t r = blockIdx.y; r < out.rows; r += gridDim.y) {
        const int64_t id = ids[r];
        for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < out.cols;
             c += int64_t(gridDim.x) * blockDim.x)
            mat_store(out, r, c, mat_load(table, id, c));
    }
}

static cudaError_t launch_embed(const Mat& table, const int32_t* ids, const Mat& out, cudaStream_t stream) {
    constexpr int kThreads = 256;
    const dim3    grid(grid_for(out.cols, kThreads, 64), unsigned(out.rows < 65535 ? out.rows : 65535));
    embed_kernel<<<grid, kThreads, 0, stream>>>(table, ids, out);
    return cudaGetLastError();
}

cudaError_t embed(const Mat& table, const int32_t* ids, const Mat& out, cudaStream_t stream) {
    if (out.rows == 0 || out.cols == 0) return cudaSuccess;
    return launch_embed(table, ids, out, stream);
}

}  // namespace dyllm::cuda
