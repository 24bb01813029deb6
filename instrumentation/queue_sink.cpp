// QueueSink: events -> EventRecords in the SPSC queue (drops counted), newest canvases in a double buffer.
#include "instrumentation/queue_sink.h"

#include <utility>

namespace dyllm {

QueueSink::QueueSink(size_t capacity) : queue_(capacity) {}

void QueueSink::store(EventRecord&& r) {
    if (!queue_.push(to_queued(std::move(r)))) dropped_.fetch_add(1, std::memory_order_relaxed);
}

void QueueSink::on_run_begin(const RunBegin& e) {
    {
        // A new run: canvases of the previous one (possibly with more sequences) must not leak into it.
        std::lock_guard<std::mutex> lock(canvas_mutex_);
        front_.clear();
        back_.clear();
    }
    RecordSink::on_run_begin(e);
}

void QueueSink::on_canvas(const CanvasSnapshot& e) {
    CanvasRecord rec = to_record(e);
    if (e.seq >= 0) {
        const size_t s = size_t(e.seq);
        if (back_.size() <= s) back_.resize(s + 1);
        back_[s].present = true;
        back_[s].canvas  = rec;
        {
            std::lock_guard<std::mutex> lock(canvas_mutex_);
            if (front_.size() < back_.size()) front_.resize(back_.size());
            std::swap(front_, back_);
        }
        // The new back buffer is the old front: bring the slot just published up to date so the next swap does not
        // bring back an older canvas of this sequence. Copy-assignment reuses the slot's vectors (no allocation in
        // steady state).
        back_[s] = front_[s];
    }
    store(EventRecord(std::move(rec)));
}

std::vector<CanvasRecord> QueueSink::latest_canvases() const {
    std::lock_guard<std::mutex> lock(canvas_mutex_);
    std::vector<CanvasRecord>   out;
    out.reserve(front_.size());
    for (const auto& slot : front_)
        if (slot.present) out.push_back(slot.canvas);
    return out;
}

}  // namespace dyllm
