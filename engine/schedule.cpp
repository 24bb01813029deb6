// Step-kind rules of DyLLM and dLLM-Cache (see schedule.h).
#include "engine/schedule.h"

#include <algorithm>

namespace dyllm {

StepKind dyllm_step_kind(int step, int full_steps, int fullq_every) {
    if (step <= std::max(1, full_steps)) return StepKind::Full;
    if (step > fullq_every && step % fullq_every != 0) return StepKind::SparseResponse;
    return StepKind::SparseFullQuery;
}

DllmCacheRefresh dllm_cache_refresh(int step, int kp, int kr) {
    return DllmCacheRefresh{(step - 1) % kp == 0, (step - 1) % kr == 0};
}

}  // namespace dyllm
