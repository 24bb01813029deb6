// Sampler scoring pieces: the argmax order (ties -> lowest id) shared by the CPU ops and the CUDA score_logits kernel,
// and the candidate order (higher score first, then lower position; engine/README.md decision 4) and keep rule of
// engine/README.md §a.9 step 5 that the host sampler's selection follows.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/hd.h"

namespace dyllm {

// Running argmax of a logits row. Ids start at the largest int so the first allowed element always wins.
struct ArgMax {
    float   v = -INFINITY;
    int32_t i = 0x7fffffff;
};

// True when (v, i) should replace best: a larger value, or the same value at a lower id. NaN never wins.
DYLLM_HD bool argmax_better(float v, int32_t i, const ArgMax& best) {
    return v > best.v || (v == best.v && i < best.i);
}

DYLLM_HD void argmax_push(ArgMax& best, float v, int32_t i) {
    if (argmax_better(v, i, best)) {
        best.v = v;
        best.i = i;
    }
}

// Merge of two partial argmaxes (associative and commutative, so any reduction tree gives the serial answer).
DYLLM_HD void argmax_merge(ArgMax& a, const ArgMax& b) {
    argmax_push(a, b.v, b.i);
}

// Candidate order of the sampler: a comes before b when its score is higher, or equal at a lower position.
DYLLM_HD bool candidate_before(float score_a, int32_t pos_a, float score_b, int32_t pos_b) {
    return score_a > score_b || (score_a == score_b && pos_a < pos_b);
}

// Keep rule (engine/README.md §a.9 step 5): rank < num_transfer or score >= threshold, and never a -inf score.
DYLLM_HD bool candidate_kept(int rank, float score, int num_transfer, float conf_threshold) {
    if (!(score > -INFINITY)) return false;
    return rank < num_transfer || score >= conf_threshold;
}

}  // namespace dyllm
