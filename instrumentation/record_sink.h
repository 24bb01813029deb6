// RecordSink: base of the sinks that keep owning copies of the events (QueueSink, RecordingSink). Every event becomes
// an EventRecord handed to store(); the wants_cosines / wants_op_timings switches are atomics settable from any thread.
#pragma once
#include <atomic>

#include "instrumentation/event_record.h"
#include "instrumentation/events.h"

namespace dyllm {

class RecordSink : public EventSink {
public:
    void on_run_begin(const RunBegin& e) override { store(EventRecord(e)); }
    void on_step_begin(const StepBegin& e) override { store(EventRecord(e)); }
    void on_op(const OpTiming& e) override { store(EventRecord(e)); }
    void on_layer_saliency(const LayerSaliency& e) override { store(EventRecord(to_record(e))); }
    void on_unmask(const Unmask& e) override { store(EventRecord(to_record(e))); }
    void on_canvas(const CanvasSnapshot& e) override { store(EventRecord(to_record(e))); }
    void on_step_end(const StepEnd& e) override { store(EventRecord(e)); }
    void on_run_end(const RunEnd& e) override { store(EventRecord(e)); }
    void on_error(const ErrorEvent& e) override { store(EventRecord(to_record(e))); }

    bool wants_cosines() const override { return wants_cosines_.load(std::memory_order_relaxed); }
    bool wants_op_timings() const override { return wants_op_timings_.load(std::memory_order_relaxed); }
    void set_wants_cosines(bool on) { wants_cosines_.store(on, std::memory_order_relaxed); }
    void set_wants_op_timings(bool on) { wants_op_timings_.store(on, std::memory_order_relaxed); }

protected:
    // Called on the engine thread with each event's owning copy.
    virtual void store(EventRecord&& r) = 0;

private:
    std::atomic<bool> wants_cosines_{true};
    std::atomic<bool> wants_op_timings_{true};
};

}  // namespace dyllm
