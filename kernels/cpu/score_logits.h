// Optimised greedy scoring of logit rows (engine/README.md §a.9 steps 3-4).
#pragma once
#include "kernels/cpu/mat.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm::cpu {

// Same contract as ref::score_logits: argmax over allowed ids (lowest id on ties), softmax over every id,
// Confidence = p(argmax), NegEntropy = sum p log(p + 1e-10) (kernels/common/scalar_math.h); a row with every id
// banned gives token -1 and score -inf. Rows split over the pool; banned ids in range (checked by the caller).
void score_logits(CMatF logits, ScoreRule rule, const int32_t* banned, int64_t n_banned, int32_t* tokens, float* scores,
                  ThreadPool& pool);

}  // namespace dyllm::cpu
