// The studio's controls of the methods' knobs (app/model/method_controls.h).
#include "app/model/method_controls.h"

namespace dyllm::app {

namespace {

// clang-format off
constexpr KnobControl kControls[] = {
    {"tau", "tau", true},                          // the tau slider
    {"full_steps", "T_full", true},
    {"approx", "update", true},                    // the stable-row update combo (StableUpdateUi)
    {"approx_columns", "update", true},
    {"approx_incremental", "update", true},
    {"fullq_every", "full-query every", false},
    {"exact_refresh", "exact refresh every", false},
    {"dream_prompt_row", "Dream prompt row", false},
    {"measure_drift", "measure drift", false},
    {"kp", "K_P", false},
    {"kr", "K_R", false},
    {"rho", "rho", false},
    {"dkv_refresh", "refresh every", false},
    {"dkv_window", "window", false},
    {"d2_k", "masked rows (k)", false},
    {"d2_sigma", "density sigma", false},
    {"d2_rollout_p", "rollout share", false},
    {"d2_inflate", "inflate gap", false},
    {"d2_update_prior", "update prior (paper)", false},
    {"d2_queried_only", "queried rows only (paper)", false},
    {"d2_block_window", "block-aligned window (paper)", false},
    {"sparse_keep_ratio", "keep ratio", false},
    {"sparse_kernel_size", "pooling window", false},
    {"elastic_gamma", "drift gamma", false},
    {"elastic_window", "sliding window", false},
    {"elastic_track", "tracked tokens", false},
    {"elastic_block_caching", "cache masks past window", false},
};
// clang-format on

}  // namespace

std::span<const KnobControl> knob_controls() {
    return kControls;
}

const KnobControl* find_knob_control(std::string_view key) {
    for (const KnobControl& c : kControls)
        if (c.key == key) return &c;
    return nullptr;
}

}  // namespace dyllm::app
