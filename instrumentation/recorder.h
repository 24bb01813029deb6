// RecordingSink: keeps a whole run in memory as owning EventRecords, for the exporters (dyllm trace), tests and the
// app's Compare view. One producer (the engine thread); readers take a copy under the mutex.
#pragma once
#include <mutex>
#include <vector>

#include "instrumentation/event_record.h"
#include "instrumentation/record_sink.h"

namespace dyllm {

class RecordingSink : public RecordSink {
public:
    // Direct access without the lock: only while no run is feeding this sink (e.g. after Session::run returned).
    const std::vector<EventRecord>& events() const { return events_; }
    // A copy taken under the lock: safe while the engine thread is still appending.
    std::vector<EventRecord> snapshot() const;
    size_t                   size() const;
    void                     clear();

protected:
    void store(EventRecord&& r) override;

private:
    mutable std::mutex       mutex_;
    std::vector<EventRecord> events_;
};

}  // namespace dyllm
