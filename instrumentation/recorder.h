// RecordingSink: keeps a whole run in memory as owning EventRecords, for the exporters (dyllm trace), tests and the
// app's Compare view. One producer (the engine thread); readers take a copy under the mutex.
#pragma once
#include <atomic>
#include <mutex>
#include <vector>

#include "instrumentation/event_record.h"
#include "instrumentation/events.h"

namespace dyllm {

class RecordingSink : public EventSink {
public:
    void on_run_begin(const RunBegin& e) override;
    void on_step_begin(const StepBegin& e) override;
    void on_op(const OpTiming& e) override;
    void on_layer_saliency(const LayerSaliency& e) override;
    void on_unmask(const Unmask& e) override;
    void on_canvas(const CanvasSnapshot& e) override;
    void on_step_end(const StepEnd& e) override;
    void on_run_end(const RunEnd& e) override;
    void on_error(const ErrorEvent& e) override;
    bool wants_cosines() const override { return wants_cosines_.load(std::memory_order_relaxed); }
    bool wants_op_timings() const override { return wants_op_timings_.load(std::memory_order_relaxed); }
    void set_wants_cosines(bool on) { wants_cosines_.store(on, std::memory_order_relaxed); }
    void set_wants_op_timings(bool on) { wants_op_timings_.store(on, std::memory_order_relaxed); }

    // Direct access without the lock: only while no run is feeding this sink (e.g. after Session::run returned).
    const std::vector<EventRecord>& events() const { return events_; }
    // A copy taken under the lock: safe while the engine thread is still appending.
    std::vector<EventRecord> snapshot() const;
    size_t size() const;
    void   clear();

private:
    void append(EventRecord&& r);

    mutable std::mutex       mutex_;
    std::vector<EventRecord> events_;
    std::atomic<bool>        wants_cosines_{true};
    std::atomic<bool>        wants_op_timings_{true};
};

}  // namespace dyllm
