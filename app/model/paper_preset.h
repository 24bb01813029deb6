// The regime where DyLLM's saving is real (its paper's setting): a long response decoded over several blocks, so
// Fast-dLLM refreshes its cache at every block start while DyLLM runs only its first steps and its full-query steps
// dense. The Controls bar's "paper regime" preset and --preset paper-regime set these knobs and a few-shot prompt
// from the built-in task suites; the defaults of the studio stay as they are.
#pragma once
#include <string>
#include <vector>

#include "app/model/task_suite.h"

namespace dyllm::app {

struct PaperRegime {
    int gen_length   = 256;  // 8 blocks of 32: Fast-dLLM refreshes 8 times
    int block_length = 32;
    int shots        = 4;  // solved examples before the query: a long prompt, as the paper's few-shot benchmarks
    int n_u          = 1;  // tokens unmasked per step: steps = gen_length / n_u
    // Decode past the end of text (--ignore-eos): the built-in models end short, and a run that stops at step 60
    // never reaches the later blocks whose refreshes the regime is about.
    bool ignore_eos = true;
};
inline constexpr PaperRegime kPaperRegime{};
inline constexpr int         kPaperRegimeNu[] = {1, 2, 4};  // the n_u the preset offers

// Whether n is one of kPaperRegimeNu.
bool paper_regime_nu_ok(int n);
// The denoising steps of the preset at n_u tokens per step.
int paper_regime_steps(int n_u);

// The preset's prompt: the first item of `items` with kPaperRegime.shots solved examples, preferring the task
// `prefer` ("add": the worked additions); -1 when no item has that many shots.
int paper_regime_item(const std::vector<TaskItem>& items, const std::string& prefer = "add");

}  // namespace dyllm::app
