// Greedy logit scoring on CUDA (engine/README.md §a.9 steps 3-4): argmax over the allowed ids (lowest id on ties) and
// its score, the softmax probability (Confidence, LLaDA) or the negative entropy (Dream), the softmax over the allowed
// ids.
#pragma once
#include <cuda_runtime_api.h>

#include "kernels/cuda/mat.cuh"

namespace dyllm::cuda {

enum class ScoreRule : uint8_t { Confidence, NegEntropy };

// logits: [n, n_vocab] F32; banned: n_banned device int32 ids, sorted ascending (binary-searched); tokens_out,
// scores_out: n device values. A row with no allowed finite-or-inf logit gets token -1 and score -inf.
cudaError_t score_logits(const Mat& logits, ScoreRule rule, const int32_t* banned, int n_banned, int32_t* tokens_out,
                         float* scores_out, cudaStream_t stream);

}  // namespace dyllm::cuda
