// What the exporters (Chrome trace, JSONL) can add to a run's event stream when the caller knows more about its ops:
// the model's op names (q, gate, up, down, ...: the studio infers them from the op order, app/model/op_names.h) and
// whether an op lost the CPU (app/model/op_preempt.h), and a timeline without the waits between steps.
#pragma once
#include <string>
#include <vector>

namespace dyllm {

struct OpAnnotation {
    std::string name;               // "" keeps the op class as the name
    bool        preempted = false;  // written as "preempted" where the op carries a CPU time
};

struct ExportOptions {
    // One per OpTiming of the events, in stream order (the exporters check the count and ignore a list that does not
    // match); empty: ops are named by their class.
    std::vector<OpAnnotation> ops;
    // Chrome trace: cut the time between one step's end and the next step's begin out of the timeline (the studio's
    // play pacing waits there; no engine work runs), so the run slice covers the work. The trace's metadata then holds
    // "step_gaps_closed": true and the time cut as "paused_ns".
    bool close_step_gaps = false;
};

}  // namespace dyllm
