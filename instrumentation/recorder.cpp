// RecordingSink: appends an owning copy of every event under a mutex.
#include "instrumentation/recorder.h"

#include <utility>

namespace dyllm {

void RecordingSink::append(EventRecord&& r) {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(r));
}

void RecordingSink::on_run_begin(const RunBegin& e) { append(EventRecord(e)); }
void RecordingSink::on_step_begin(const StepBegin& e) { append(EventRecord(e)); }
void RecordingSink::on_op(const OpTiming& e) { append(EventRecord(e)); }
void RecordingSink::on_layer_saliency(const LayerSaliency& e) { append(EventRecord(to_record(e))); }
void RecordingSink::on_unmask(const Unmask& e) { append(EventRecord(to_record(e))); }
void RecordingSink::on_canvas(const CanvasSnapshot& e) { append(EventRecord(to_record(e))); }
void RecordingSink::on_step_end(const StepEnd& e) { append(EventRecord(e)); }
void RecordingSink::on_run_end(const RunEnd& e) { append(EventRecord(e)); }
void RecordingSink::on_error(const ErrorEvent& e) { append(EventRecord(to_record(e))); }

std::vector<EventRecord> RecordingSink::snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_;
}

size_t RecordingSink::size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_.size();
}

void RecordingSink::clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.clear();
}

}  // namespace dyllm
