// Which run a speed-up is measured against: a finished run of the original method with the same model, prompt,
// lengths, steps, block, backend and threads as the run shown. Anything else (another model, a different thread
// count) would turn its tokens/s into a meaningless ratio.
#pragma once
#include <string>

#include "app/model/run_list.h"

namespace dyllm::app {

// "" when `base` is a baseline for `run`; otherwise the first reason it is not, e.g. "model tiny-llada, not
// tiny-dream" or "method dyllm, not original".
std::string baseline_mismatch(const RunEntry& run, const RunEntry& base);

// The newest entry of `runs` (other than `run`) that is a baseline for `run`; nullptr when none.
const RunEntry* find_baseline(const RunList& runs, const RunEntry& run);

// How the Summary names the baseline: "#3 original, tiny-llada" (the rest of its settings are the run's own).
std::string baseline_name(const RunEntry& base);

}  // namespace dyllm::app
