// QueueSink: the engine -> UI bridge (STYLE.md 2.7). Every event becomes an EventRecord in a lock-free SPSC ring
// (drops are counted, the engine never blocks on the UI); the newest canvas per sequence is also kept in a
// mutex-guarded double buffer so the UI can redraw it every frame even when the ring dropped events.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "instrumentation/event_record.h"
#include "instrumentation/events.h"
#include "instrumentation/ring_buffer.h"

namespace dyllm {

class QueueSink : public EventSink {
public:
    // capacity: ring slots. 1 << 16 holds a few steps of an 8B run with op timings on (32 layers x ~20 ops per step)
    // before the UI must drain it.
    explicit QueueSink(size_t capacity = 1 << 16);

    // ---- producer side (engine worker thread) ----
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

    // ---- consumer side (UI thread) ----
    bool pop(EventRecord& out) { return ring_.pop(out); }
    // Newest canvas of every sequence seen since the last on_run_begin, ordered by sequence index.
    std::vector<CanvasRecord> latest_canvases() const;
    uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
    size_t   queued() const { return ring_.size(); }
    size_t   capacity() const { return ring_.capacity(); }

    // ---- either thread ----
    void set_wants_cosines(bool on) { wants_cosines_.store(on, std::memory_order_relaxed); }
    void set_wants_op_timings(bool on) { wants_op_timings_.store(on, std::memory_order_relaxed); }

private:
    void push(EventRecord&& r);

    SpscRing<EventRecord> ring_;
    std::atomic<uint64_t> dropped_{0};
    std::atomic<bool>     wants_cosines_{true};
    std::atomic<bool>     wants_op_timings_{true};

    // Canvas double buffer, indexed by sequence; a slot with present == false has not been filled this run.
    // The producer alone writes back_ and swaps under canvas_mutex_; readers copy front_ under the same mutex. Only
    // the producer ever changes front_ (by swapping), so the producer may read front_ without the lock.
    struct CanvasSlot {
        bool         present = false;
        CanvasRecord canvas;
    };
    mutable std::mutex      canvas_mutex_;
    std::vector<CanvasSlot> front_, back_;
};

}  // namespace dyllm
