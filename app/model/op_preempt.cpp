// Preempted-op flag from wall and thread CPU time (app/model/op_preempt.h).
#include "app/model/op_preempt.h"

namespace dyllm::app {

static_assert(kOpCpuTimeMinNs == 200'000, "the texts here and in the Time panel say 0.2 ms");

OpCpuState op_cpu_state(const OpTiming& o) {
    if (o.cpu_ns < 0 || o.device != EventDevice::Cpu) return OpCpuState::Unmeasured;
    if (o.split) return OpCpuState::Split;
    return double(o.dur_ns) > kPreemptRatio * double(o.cpu_ns) + double(kPreemptSlackNs) ? OpCpuState::Preempted
                                                                                          : OpCpuState::OnCpu;
}

const char* op_cpu_state_text(OpCpuState s) {
    switch (s) {
        case OpCpuState::Unmeasured: return "no CPU time recorded (taken for CPU ops of 0.2 ms or more)";
        case OpCpuState::Split: return "split over the pool's threads (CPU time: the calling thread's share)";
        case OpCpuState::OnCpu: return "on the CPU for its wall time";
        case OpCpuState::Preempted: return "PREEMPTED or waiting: wall time well above its CPU time";
    }
    return "?";
}

}  // namespace dyllm::app
