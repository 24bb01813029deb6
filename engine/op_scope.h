// ScopedOp: times one backend op and reports it to the EventSink (on_op_begin + on_op): wall time on the steady clock
// and the CPU time of the calling thread, plus whether the op handed work to the CPU pool. With no sink, or a sink
// that does not want op timings, it costs one branch. On an asynchronous backend the times are host-side launch times.
#pragma once
#include <algorithm>
#include <chrono>
#include <ctime>

#include "instrumentation/events.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm {

inline int64_t steady_now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Reads of the thread CPU clock this thread made (thread_cpu_now_ns): what ScopedOp's reuse saves, for the tests.
inline thread_local uint64_t t_cpu_clock_reads = 0;

inline uint64_t thread_cpu_clock_reads() {
    return t_cpu_clock_reads;
}

// CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID); -1 when the clock is unavailable.
inline int64_t thread_cpu_now_ns() {
    ++t_cpu_clock_reads;
    timespec ts{};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return -1;
    return int64_t(ts.tv_sec) * 1'000'000'000 + int64_t(ts.tv_nsec);
}

// This thread's last CPU clock reading (and the steady clock just before it): the start reading of its next ops while
// it is at most kCpuMarkMaxAgeNs old (instrumentation/events.h).
struct ThreadCpuMark {
    int64_t wall_ns = 0;
    int64_t cpu_ns  = -1;  // -1: none yet
};
inline thread_local ThreadCpuMark t_cpu_mark;

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
        // The CPU clock's reads enclose the wall interval instead of falling inside it: the op's wall time stays
        // what it was, and cpu_ns may exceed dur_ns by the reads' own cost and the start reading's age.
        handoffs0_        = cpu::thread_handoffs();
        const int64_t now = steady_now_ns();
        if (t_cpu_mark.cpu_ns < 0 || now - t_cpu_mark.wall_ns > kCpuMarkMaxAgeNs) {
            t_cpu_mark     = {now, thread_cpu_now_ns()};
            ev_.t_begin_ns = steady_now_ns();  // the read stays outside the op's wall time
        } else {
            ev_.t_begin_ns = now;
        }
        // The thread's CPU clock at the op's start, if the thread ran the engine from the start reading on.
        cpu0_ = t_cpu_mark.cpu_ns < 0 ? -1 : t_cpu_mark.cpu_ns + (ev_.t_begin_ns - t_cpu_mark.wall_ns);
        gap_  = int32_t(ev_.t_begin_ns - t_cpu_mark.wall_ns);
    }
    ~ScopedOp() {
        if (!sink_) return;
        const int64_t end = steady_now_ns();
        ev_.dur_ns        = end - ev_.t_begin_ns;
        if (ev_.dur_ns >= kOpCpuTimeMinNs && cpu0_ >= 0) {
            const int64_t cpu1 = thread_cpu_now_ns();
            t_cpu_mark         = {end, cpu1};
            ev_.cpu_ns         = cpu1 >= 0 ? std::max<int64_t>(0, cpu1 - cpu0_) : -1;
            ev_.cpu_gap_ns     = cpu1 >= 0 ? gap_ : 0;
        }
        ev_.split = cpu::thread_handoffs() != handoffs0_;
        sink_->on_op(ev_);
    }
    ScopedOp(const ScopedOp&)            = delete;
    ScopedOp& operator=(const ScopedOp&) = delete;

private:
    EventSink* sink_;
    OpTiming   ev_;
    int64_t    cpu0_      = -1;  // -1: no start reading (no clock)
    int32_t    gap_       = 0;   // wall time from the start reading to the op's start (<= kCpuMarkMaxAgeNs)
    uint64_t   handoffs0_ = 0;
};

}  // namespace dyllm
