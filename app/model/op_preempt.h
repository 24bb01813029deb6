// Ops that lost the CPU: an op that ran on one thread (the pool did not split it) but whose wall time exceeds that
// thread's CPU time by a clear margin was preempted or kept waiting (page faults on mapped weights, a lock), so its
// time says more about the machine than about the op. The Time panel marks them and can leave them out of the stats.
#pragma once
#include <cstdint>

#include "instrumentation/events.h"

namespace dyllm::app {

// Flagged when wall > kPreemptRatio x cpu + kPreemptSlackNs. The slack keeps microsecond ops, whose two clocks differ
// by scheduling noise of a few us, from being flagged; 0.2 ms is above a wake-up after a short sleep on the 2-core dev
// machine and far below the 7-30 ms preemptions issue #13 saw. The ratio leaves room for a busy op's system time.
constexpr double  kPreemptRatio   = 1.5;
constexpr int64_t kPreemptSlackNs = 200'000;
// Shorter ops carry no CPU time (instrumentation/events.h): none of them could be flagged.
static_assert(kOpCpuTimeMinNs <= kPreemptSlackNs, "every op the flag could catch carries its CPU time");
// An op's CPU time may fall short by a preemption between its start reading and its start (up to kCpuMarkMaxAgeNs,
// events.h). An op of wall time w >= kOpCpuTimeMinNs that had the CPU then reads cpu >= w - age, and is not flagged
// while w <= ratio x (w - age) + slack for every such w, i.e. ratio x age <= (ratio - 1) x min + slack.
static_assert(kPreemptRatio * double(kCpuMarkMaxAgeNs) <=
                  (kPreemptRatio - 1.0) * double(kOpCpuTimeMinNs) + double(kPreemptSlackNs),
              "a preemption before an op's start cannot flag an op that had the CPU");

enum class OpCpuState : uint8_t {
    Unmeasured,  // no CPU time (older recordings) or a host-timed GPU op, whose host time is only the launch
    Split,       // ran on several pool threads: the calling thread's CPU time is only its share
    OnCpu,       // one thread, and it had the CPU for the op's wall time (within the margin)
    Preempted,   // one thread, wall > kPreemptRatio x cpu + kPreemptSlackNs
};

OpCpuState op_cpu_state(const OpTiming& o);
inline bool op_preempted(const OpTiming& o) { return op_cpu_state(o) == OpCpuState::Preempted; }
const char* op_cpu_state_text(OpCpuState s);  // one short phrase for tooltips

}  // namespace dyllm::app
