// Chrome Trace Event exporter (JSON object form) for Perfetto, chrome://tracing and Tracy's importer. Tracks: run,
// steps, engine ops per device, GPU kernels/memcpy/memset (CUPTI); counters for tau, salient fraction, tokens/s and
// per-layer drift (when measured); the RunBegin environment in "metadata" and as the first event's args.
#pragma once
#include <ostream>
#include <vector>

#include "instrumentation/event_record.h"
#include "instrumentation/export_options.h"
#include "instrumentation/kernel_record.h"

namespace dyllm {

// Timestamps are microseconds (fractions keep ns precision) relative to the earliest timed event; every duration is
// >= 0, timestamps are non-decreasing per track, and non-finite numbers are written as null.
void write_chrome_trace(std::ostream& os, const std::vector<EventRecord>& events);
void write_chrome_trace(std::ostream& os, const std::vector<EventRecord>& events,
                        const std::vector<KernelRecord>& kernels);
// With the op names, preempted flags and gap closing of opt (instrumentation/export_options.h).
void write_chrome_trace(std::ostream& os, const std::vector<EventRecord>& events,
                        const std::vector<KernelRecord>& kernels, const ExportOptions& opt);

}  // namespace dyllm
