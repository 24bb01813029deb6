// Preempted-op flag from wall and thread CPU time (app/model/op_preempt.h).
#include "app/model/op_preempt.h"

#include <algorithm>

namespace dyllm::app {

static_assert(kOpCpuTimeMinNs == 200'000, "the texts here and in the Time panel say 0.2 ms");

OpCpuState op_cpu_state(const OpTiming& o) {
    if (o.cpu_ns < 0 || o.device != EventDevice::Cpu) return OpCpuState::Unmeasured;
    if (o.split) return OpCpuState::Split;
    // The top of the op's CPU range (events.h): a preemption before the op's start cannot flag it.
    const double cpu_max = double(o.cpu_ns) + double(std::max<int32_t>(o.cpu_gap_ns, 0));
    return double(o.dur_ns) > kPreemptRatio * cpu_max + double(kPreemptSlackNs) ? OpCpuState::Preempted
                                                                                : OpCpuState::OnCpu;
}

const char* op_cpu_state_text(OpCpuState s) {
    switch (s) {
        case OpCpuState::Unmeasured:
            return "no CPU time recorded (taken for CPU ops of 0.2 ms or more)";
        case OpCpuState::Split:
            return "split over the pool's threads (CPU time: the calling thread's share)";
        case OpCpuState::OnCpu:
            return "no sign of preemption: wall time within its CPU time's margin";
        case OpCpuState::Preempted:
            return "PREEMPTED or waiting: wall time well above its CPU time";
    }
    return "?";
}

}  // namespace dyllm::app
