// JSONL export of a run: line 1 is the run_begin record (model, method, backend, every parameter), then one record
// per denoising step (canvas, unmask, per-layer saliency with histograms and salient sets, op timings, step totals),
// then run_end and error records. read_jsonl() restores the events, so write -> read -> write is the identity.
#pragma once
#include <istream>
#include <ostream>
#include <vector>

#include "instrumentation/event_record.h"
#include "instrumentation/export_options.h"

namespace dyllm {

// Events of a step are grouped into that step's line (keyed by the step number); events that belong to no open step
// (e.g. an error between steps) get their own line in order.
void write_jsonl(std::ostream& os, const std::vector<EventRecord>& events);
// With each op's name and preempted flag from opt.ops (fields "name" and "preempted", which read_jsonl skips).
void write_jsonl(std::ostream& os, const std::vector<EventRecord>& events, const ExportOptions& opt);

// Reads what write_jsonl wrote. Per step the events come back in the order StepBegin, OpTiming..., LayerSaliency...,
// Unmask..., Canvas..., StepEnd. Throws std::runtime_error naming the line and the field that is wrong.
std::vector<EventRecord> read_jsonl(std::istream& is);

}  // namespace dyllm
