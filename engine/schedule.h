// Which kind of step each method runs (spec a.3 for DyLLM, d for Fast-dLLM, e for dLLM-Cache).
#pragma once
#include "instrumentation/events.h"

namespace dyllm {

// DyLLM: steps 1..max(1, T_full) are FULL; later steps are response-only when step > P and step % P != 0 (P =
// fullq_every, 4 in the reference), full-query sparse otherwise. `step` is 1-based.
StepKind dyllm_step_kind(int step, int full_steps, int fullq_every);

// dLLM-Cache refresh rule: prompt refreshed when (step - 1) % K_P == 0, response when (step - 1) % K_R == 0.
struct DllmCacheRefresh {
    bool prompt = false;
    bool gen    = false;
};
DllmCacheRefresh dllm_cache_refresh(int step, int kp, int kr);

}  // namespace dyllm
