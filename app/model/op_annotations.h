// What the studio knows about a run's ops beyond the event stream, in the exporters' form
// (instrumentation/export_options.h): each op's model name (q, gate, up, down...: app/model/op_names.h) and its
// preempted flag (app/model/op_preempt.h), one per OpTiming of RunHistory::events() in stream order.
#pragma once
#include "app/model/run_history.h"
#include "instrumentation/export_options.h"

namespace dyllm::app {

// close_step_gaps: the trace leaves out the waits between steps (the studio's play pacing).
ExportOptions export_options(const RunHistory& h, bool close_step_gaps);

}  // namespace dyllm::app
