// Side-by-side comparison of two runs of the same prompt (e.g. original vs dyllm, or two taus): token diff and the
// speed/work figures the Compare panel shows.
#pragma once
#include <string>
#include <vector>

#include "app/model/run_history.h"

namespace dyllm::app {

struct RunCompare {
    int32_t positions = 0;       // response positions compared (min of both gen lengths)
    int32_t same = 0, differ = 0, masked = 0;  // masked: still masked in either run
    std::vector<uint8_t> differs;  // per position: 1 when both are unmasked and the tokens differ
    RunSummary a, b;
    double speedup = 0;            // tokens/s of b over a (0 when a has no time)
    double flops_ratio = 0;        // b flops over a flops
};

// Compares sequence `seq` of two finished (or partial) runs at their last step.
RunCompare compare_runs(const RunHistory& a, const RunHistory& b, int seq = 0);

// "dyllm tau=0.990" style label for a run, from its RunBegin.
std::string run_label(const RunHistory& h);

}  // namespace dyllm::app
