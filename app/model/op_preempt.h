// Ops that lost the CPU: an op that ran on one thread (the pool did not split it) but whose wall time exceeds that
// thread's CPU time by a clear margin was preempted or kept waiting (page faults on mapped weights, a lock), so its
// time says more about the machine than about the op. The Time panel marks them and can leave them out of the stats.
#pragma once
#include <cstdint>

#include "instrumentation/events.h"

namespace dyllm::app {

// Flagged when wall > kPreemptRatio x (cpu + gap) + kPreemptSlackNs. The slack keeps microsecond ops, whose two clocks
// differ by scheduling noise of a few us, from being flagged; 0.2 ms is above a wake-up after a short sleep on the
// 2-core VM and far below the 7-30 ms preemptions a busy host inflicts. The ratio leaves room for a busy op's system
// time.
constexpr double  kPreemptRatio   = 1.5;
constexpr int64_t kPreemptSlackNs = 200'000;
// Shorter ops carry no CPU time (instrumentation/events.h): none of them could be flagged.
static_assert(kOpCpuTimeMinNs <= kPreemptSlackNs, "every op the flag could catch carries its CPU time");
// An op's CPU time is a range (OpTiming::cpu_ns, events.h): the time the thread lost between the start reading and
// the op's start is counted as the op's own, at most cpu_gap_ns. The flag takes the top of the range, so it holds
// only when the op itself lost the CPU; an op that had it reads cpu_ns + cpu_gap_ns >= its wall time and is never
// flagged, however old the start reading. The price of an old reading is a missed short preemption: at the largest
// gap (kCpuMarkMaxAgeNs, 1 ms) an op must lose 1.7 ms plus half its CPU time to be flagged (0 gap: 0.2 ms plus
// half), against the 7-30 ms preemptions of a busy host.

enum class OpCpuState : uint8_t {
    Unmeasured,  // no CPU time (older recordings) or a host-timed GPU op, whose host time is only the launch
    Split,       // ran on several pool threads: the calling thread's CPU time is only its share
    OnCpu,       // one thread, and nothing says it lost the CPU (within the margin and the gap)
    Preempted,   // one thread, wall > kPreemptRatio x (cpu + gap) + kPreemptSlackNs
};

OpCpuState  op_cpu_state(const OpTiming& o);
inline bool op_preempted(const OpTiming& o) {
    return op_cpu_state(o) == OpCpuState::Preempted;
}
const char* op_cpu_state_text(OpCpuState s);  // one short phrase for tooltips

}  // namespace dyllm::app
