// Logit scoring: one block per row, three passes over the vocabulary (argmax, softmax sum, entropy), all in fp32
// with the shared argmax order and entropy term of kernels/common.
#include "kernels/common/scalar_math.h"
#include "kernels/common/score_math.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/score_logits.cuh"

namespace dyllm::cuda {

constexpr int kScoreThreads = 512;

__device__ __forceinline__ bool is_banned(const int32_t* banned, int n_banned, int32_t id) {
    int lo = 0, hi = n_banned;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (banned[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n_banned && banned[lo] == id;
}

static __global__ void score_logits_kernel(Mat logits, ScoreRule rule, const int32_t* banned, int n_banned,
                                           int32_t* tokens_out, float* scores_out) {
    __shared__ float   scratch[32];
    __shared__ float   sv[32];
    __shared__ int32_t si[32];
    __shared__ ArgMax  best_sh;
    const int          lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    for (int64_t r = blockIdx.x; r < logits.rows; r += gridDim.x) {
        const float* row = static_cast<const float*>(logits.data) + r * logits.ld;
        // Pass 1: argmax. Each thread visits ascending ids, the merge keeps the serial first-maximum answer.
        ArgMax best;
        for (int64_t v = threadIdx.x; v < logits.cols; v += blockDim.x)
            if (!is_banned(banned, n_banned, int32_t(v))) argmax_push(best, row[v], int32_t(v));
        for (int o = 16; o > 0; o >>= 1) {
            ArgMax other;
            other.v = __shfl_xor_sync(0xffffffffu, best.v, o);
            other.i = __shfl_xor_sync(0xffffffffu, best.i, o);
            argmax_merge(best, other);
        }
        __syncthreads();  // the shared arrays of the previous row are no longer read
        if (lane == 0) {
            sv[warp] = best.v;
            si[warp] = best.i;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            ArgMax all;
            for (int w = 0; w < n_warps; ++w) argmax_merge(all, ArgMax{sv[w], si[w]});
            best_sh = all;
        }
        __syncthreads();
        const ArgMax top = best_sh;
        if (top.i == 0x7fffffff) {  // nothing allowed
            if (threadIdx.x == 0) {
                tokens_out[r] = -1;
                scores_out[r] = -INFINITY;
            }
            continue;
        }
        // Pass 2: softmax normaliser over the WHOLE vocabulary, banned ids included (the official samplers'
        // softmax, engine/README.md decision 11), relative to the maximum over every id.
        float mx = -INFINITY;
        for (int64_t v = threadIdx.x; v < logits.cols; v += blockDim.x) mx = fmaxf(mx, row[v]);
        const float m = block_max(mx, scratch);
        float       l = 0.0f;
        for (int64_t v = threadIdx.x; v < logits.cols; v += blockDim.x) l += expf(row[v] - m);
        l = block_sum(l, scratch);
        float score;
        if (rule == ScoreRule::Confidence) {
            score = expf(top.v - m) / l;
        } else {
            // Pass 3: sum_v p_v log(p_v + 1e-10) over every id.
            float h = 0.0f;
            for (int64_t v = threadIdx.x; v < logits.cols; v += blockDim.x) h += neg_entropy_term(expf(row[v] - m) / l);
            score = block_sum(h, scratch);
        }
        if (threadIdx.x == 0) {
            tokens_out[r] = top.i;
            scores_out[r] = score;
        }
    }
}

static cudaError_t launch_score_logits(const Mat& logits, ScoreRule rule, const int32_t* banned, int n_banned,
                                       int32_t* tokens_out, float* scores_out, cudaStream_t stream) {
    score_logits_kernel<<<grid_for(logits.rows, 1, 65535), kScoreThreads, 0, stream>>>(logits, rule, banned, n_banned,
                                                                                       tokens_out, scores_out);
    return cudaGetLastError();
}

cudaError_t score_logits(const Mat& logits, ScoreRule rule, const int32_t* banned, int n_banned, int32_t* tokens_out,
                         float* scores_out, cudaStream_t stream) {
    if (logits.rows == 0) return cudaSuccess;
    return launch_score_logits(logits, rule, banned, n_banned, tokens_out, scores_out, stream);
}

}  // namespace dyllm::cuda
