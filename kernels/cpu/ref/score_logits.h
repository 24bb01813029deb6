// Reference greedy scoring of logit rows (engine/README.md §a.9 steps 3-4).
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu::ref {

// For each row of logits [n, n_vocab]: token = argmax over ids not in banned[0..n_banned) (lowest id on ties); the
// softmax runs over EVERY id, banned ones included, as the official samplers' (engine/README.md decision 11);
// score = p(token) (Confidence) or sum_v p_v log(p_v + 1e-10) over every id (NegEntropy).
// A row with every id banned gives token -1 and score -inf.
void score_logits(CMatF logits, ScoreRule rule, const int32_t* banned, int64_t n_banned, int32_t* tokens,
                  float* scores);

}  // namespace dyllm::cpu::ref
