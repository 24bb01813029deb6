// One task suite run through the engine the way `dyllm eval` scores it (batched lock-step sessions, few-shot prompts,
// exact-match answers, the engine's FLOP accounting); shared by `dyllm eval` and `dyllm report`.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "app/model/task_suite.h"
#include "engine/engine.h"

namespace dyllm {

struct TaskEvalOptions {
    int                      limit   = 0;        // items per task, 0 = every item
    int                      shots   = -1;       // solved examples per prompt; -1 = each item's own prompt
    int                      batch   = 16;       // sequences per lock-step session
    bool                     verbose = false;    // each item's response and verdict on stderr
    const std::atomic<bool>* cancel  = nullptr;  // checked after every step: set, the score stops (the studio's sweep)
};

struct TaskScore {
    std::string name;
    int         n = 0, correct = 0, full = 0;
    int64_t     generated_tokens = 0;
    double      denoise_s = 0, wall_s = 0;
    int64_t     forward_passes = 0;
    double      flops = 0, dense_flops = 0;  // the engine's accounting (FLOPs vs a dense forward of each step)
    bool        cancelled = false;           // o.cancel was set: the counts cover only the items run before it
};

// Runs the first o.limit items of the suite. Throws InputError when a prompt plus gen length exceeds max_position.
TaskScore eval_task(const Model& model, const TaskSuite& suite, const DiffusionParams& params, const TaskEvalOptions& o,
                    EventSink* sink = nullptr);

}  // namespace dyllm
