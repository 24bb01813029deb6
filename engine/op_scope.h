// ScopedOp: times one backend op and reports it to the EventSink (on_op_begin + on_op). With no sink, or a sink that
// does not want op timings, it costs one branch. On an asynchronous backend the time is the host-side launch time;
// CUPTI supplies the kernel times there.
#pragma once
#include <chrono>

#include "instrumentation/events.h"

namespace dyllm {

inline int64_t steady_now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
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
        ev_.t_begin_ns = steady_now_ns();
    }
    ~ScopedOp() {
        if (!sink_) return;
        ev_.dur_ns = steady_now_ns() - ev_.t_begin_ns;
        sink_->on_op(ev_);
    }
    ScopedOp(const ScopedOp&)            = delete;
    ScopedOp& operator=(const ScopedOp&) = delete;

private:
    EventSink* sink_;
    OpTiming   ev_;
};

}  // namespace dyllm
