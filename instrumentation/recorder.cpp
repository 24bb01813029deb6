// RecordingSink: appends an owning copy of every event under a mutex.
#include "instrumentation/recorder.h"

#include <utility>

namespace dyllm {

void RecordingSink::store(EventRecord&& r) {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(r));
}

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
