// ScopedOp: times one backend op and reports it to the EventSink (on_op_begin + on_op): wall time on the steady clock
// and the CPU time of the calling thread, plus whether the op handed work to the CPU pool. With no sink, or a sink
// that does not want op timings, it costs one branch. On an asynchronous backend the times are host-side launch times.
#pragma once
#include <chrono>
#include <ctime>

#include "instrumentation/events.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm {

inline int64_t steady_now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID); -1 when the clock is unavailable.
inline int64_t thread_cpu_now_ns() {
    timespec ts{};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return -1;
    return int64_t(ts.tv_sec) * 1'000'000'000 + int64_t(ts.tv_nsec);
}

class ScopedOp {
public:
    ScopedOp(EventSink* sink, int32_t step, int32_t layer, OpClass op, double flops, double bytes, int32_t rows,
             EventDevice device = EventDevice::Cpu)
        : sink_(sink && sink->wants_op_timings() ? sink : nullptr) {
        if (!sink_) return;
        ev_.step   = step;
        ev_.layer  = layer;
        ev_.op     = op;
        ev_.flops  = flops;
        ev_.bytes  = bytes;
        ev_.rows   = rows;
        ev_.device = device;
        sink_->on_op_begin(step, layer, op);
        // The CPU clock is a system call (about 1 us on the 2-core dev VM, against 25 ns for steady_clock), so its
        // reads enclose the wall interval instead of falling inside it: the op's wall time stays what it was, and
        // cpu_ns may exceed dur_ns by the two reads' own cost.
        handoffs0_     = cpu::thread_handoffs();
        cpu0_          = thread_cpu_now_ns();
        ev_.t_begin_ns = steady_now_ns();
    }
    ~ScopedOp() {
        if (!sink_) return;
        ev_.dur_ns         = steady_now_ns() - ev_.t_begin_ns;
        const int64_t cpu1 = thread_cpu_now_ns();
        ev_.cpu_ns         = cpu0_ >= 0 && cpu1 >= 0 ? cpu1 - cpu0_ : -1;
        ev_.split          = cpu::thread_handoffs() != handoffs0_;
        sink_->on_op(ev_);
    }
    ScopedOp(const ScopedOp&)            = delete;
    ScopedOp& operator=(const ScopedOp&) = delete;

private:
    EventSink* sink_;
    OpTiming   ev_;
    int64_t    cpu0_      = -1;
    uint64_t   handoffs0_ = 0;
};

}  // namespace dyllm
