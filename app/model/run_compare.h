// Side-by-side comparison of two runs of the same prompt (e.g. original vs dyllm, or two taus): token diff and the
// speed/work figures the Compare panel shows.
#pragma once
#include <string>
#include <vector>

#include "app/model/run_history.h"

namespace dyllm::app {

struct RunCompare {
    int32_t              positions = 0;                     // response positions compared (min of both gen lengths)
    int32_t              same = 0, differ = 0, masked = 0;  // masked: still masked in either run
    std::vector<uint8_t> differs;  // per position: 1 when both are unmasked and the tokens differ
    RunSummary           a, b;
    double               speedup     = 0;  // tokens/s of b over a (0 when a has no time)
    double               flops_ratio = 0;  // b flops over a flops
    // A speed-up means something only between two complete runs: "" when both finished normally, otherwise why not
    // ("run A aborted at step 9", "run B still running"); the panel then greys the figure out.
    std::string speedup_note;
    bool        speedup_valid() const { return speedup_note.empty() && speedup > 0; }
};

// Compares sequence `seq` of two finished (or partial) runs: the tokens at their last step, or with step >= 0 the
// canvases lockstep(a, b, step) shows. The summaries always cover the whole runs.
RunCompare compare_runs(const RunHistory& a, const RunHistory& b, int seq = 0, int step = -1);

// Lock-step replay of a pair: one slider step k shows each run after min(k, its last ended step), so a shorter run
// (aborted, or stopped at end of text) stays on its last canvas while the other goes on.
struct LockStep {
    int a = 0, b = 0;  // the step each run shows
    int last = 0;      // the slider's end: the larger count of ended steps
};
LockStep lockstep(const RunHistory& a, const RunHistory& b, int k);

// The taus the run's steps actually used (StepBegin.tau), consecutive repeats merged: {0.95, 0.9999} after one live
// change. Empty when no step carried a finite tau.
std::vector<float> run_taus(const RunHistory& h);

// "dyllm tau 0.99" style label for a run: the method, the taus its steps used ("tau 0.95->0.9999" after live changes;
// RunBegin's tau before the first step) and "exact-attn" for DyLLM's Salient ablation.
std::string run_label(const RunHistory& h);

// "" for a run that ended normally, "running", or "aborted at step S" (cancelled or replaced): pickers append it, and
// Compare refuses a speed-up for such runs.
std::string run_state_note(const RunHistory& h);

}  // namespace dyllm::app
