// Candidate selection: one block per sequence, one thread per candidate computing its rank by counting the candidates
// ordered before it (candidates per sequence are at most a block, 32 by default, so O(n^2) compares are cheap).
#include "kernels/common/score_math.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/select_candidates.cuh"

namespace dyllm::cuda {

constexpr int kSelectThreads = 128;

static __global__ void select_candidates_kernel(const float* scores, const int32_t* positions, const int32_t* cu_cand,
                                                const int32_t* num_transfer, float conf_threshold, uint8_t* keep_out,
                                                int32_t* rank_out) {
    const int b = blockIdx.x;
    const int c0 = cu_cand[b], c1 = cu_cand[b + 1];
    for (int i = c0 + int(threadIdx.x); i < c1; i += blockDim.x) {
        const float   si = scores[i];
        const int32_t pi = positions[i];
        int           rank = 0;
        for (int j = c0; j < c1; ++j)
            if (j != i && candidate_before(scores[j], positions[j], si, pi)) ++rank;
        keep_out[i] = candidate_kept(rank, si, num_transfer[b], conf_threshold) ? 1 : 0;
        if (rank_out) rank_out[i] = rank;
    }
}

static cudaError_t launch_select_candidates(const float* scores, const int32_t* positions, const int32_t* cu_cand,
                                            int n_seq, const int32_t* num_transfer, float conf_threshold,
                                            uint8_t* keep_out, int32_t* rank_out, cudaStream_t stream) {
    select_candidates_kernel<<<n_seq, kSelectThreads, 0, stream>>>(scores, positions, cu_cand, num_transfer,
                                                                   conf_threshold, keep_out, rank_out);
    return cudaGetLastError();
}

cudaError_t select_candidates(const float* scores, const int32_t* positions, const int32_t* cu_cand, int n_seq,
                              const int32_t* num_transfer, float conf_threshold, uint8_t* keep_out, int32_t* rank_out,
                              cudaStream_t stream) {
    if (n_seq == 0) return cudaSuccess;
    return launch_select_candidates(scores, positions, cu_cand, n_seq, num_transfer, conf_threshold, keep_out,
                                    rank_out, stream);
}

}  // namespace dyllm::cuda
