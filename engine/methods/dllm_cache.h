// dLLM-Cache's refresh rule (engine/README.md §e), exposed for tests.
#pragma once

namespace dyllm {

// Prompt refreshed when (step - 1) % K_P == 0, response when (step - 1) % K_R == 0. `step` is 1-based.
struct DllmCacheRefresh {
    bool prompt = false;
    bool gen    = false;
};
DllmCacheRefresh dllm_cache_refresh(int step, int kp, int kr);

}  // namespace dyllm
