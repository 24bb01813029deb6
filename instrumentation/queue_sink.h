// QueueSink: the engine -> UI bridge. Every event becomes an EventRecord in a lock-free SPSC queue
// (drops are counted, the engine never blocks on the UI); the newest canvas per sequence is also kept in a
// mutex-guarded double buffer so the UI can redraw it every frame even when the queue dropped events.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "instrumentation/event_record.h"
#include "instrumentation/queued_record.h"
#include "instrumentation/record_sink.h"
#include "instrumentation/spsc_queue.h"

namespace dyllm {

class QueueSink : public RecordSink {
public:
    // capacity: records queued at most (80 bytes each). 1 << 16 holds a few steps of an 8B run with op timings on
    // (32 layers x ~20 ops per step) before the UI must drain it; the memory is taken in blocks only as the UI falls
    // behind (spsc_queue.h).
    explicit QueueSink(size_t capacity = 1 << 16);

    // ---- producer side (engine worker thread): every event is queued (RecordSink); these two also keep the
    // canvas double buffer ----
    void on_run_begin(const RunBegin& e) override;
    void on_canvas(const CanvasSnapshot& e) override;

    // ---- consumer side (UI thread) ----
    bool pop(EventRecord& out) {
        QueuedRecord q;
        if (!queue_.pop(q)) return false;
        out = from_queued(std::move(q));
        return true;
    }
    // Newest canvas of every sequence seen since the last on_run_begin, ordered by sequence index.
    std::vector<CanvasRecord> latest_canvases() const;
    uint64_t                  dropped() const { return dropped_.load(std::memory_order_relaxed); }
    size_t                    queued() const { return queue_.size(); }
    size_t                    capacity() const { return queue_.capacity(); }

    // ---- either thread: set_wants_cosines(bool), set_wants_op_timings(bool) (RecordSink) ----

protected:
    void store(EventRecord&& r) override;

private:
    SpscQueue<QueuedRecord> queue_;  // the large records boxed (queued_record.h)
    std::atomic<uint64_t>   dropped_{0};

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
