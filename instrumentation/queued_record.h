// QueuedRecord: an EventRecord as a queue slot holds it. The slot of a variant is as large as its largest alternative
// (a layer's saliency: 280 bytes of histograms and vector headers; a run's parameters: 224), while nearly every
// record queued is an op timing (72 bytes). So the records larger than an op timing travel behind a pointer (one
// allocation each: a few per layer and step, beside the vectors they already own) and a slot is 80 bytes instead of
// 288: a pushed op timing writes 2 cache lines of the queue instead of 3, and a full QueueSink of 1 << 16 records
// is 5.2 MB instead of 18.9.
#pragma once
#include <memory>
#include <type_traits>
#include <utility>
#include <variant>

#include "instrumentation/event_record.h"

namespace dyllm {

inline constexpr size_t kQueuedInlineBytes = sizeof(OpTiming);

template <class T>
using Queued = std::conditional_t<(sizeof(T) > kQueuedInlineBytes), std::unique_ptr<T>, T>;

template <class V>
struct QueuedVariant;
template <class... T>
struct QueuedVariant<std::variant<T...>> {
    using type = std::variant<Queued<T>...>;  // alternative i is Queued of EventRecord's alternative i
};
using QueuedRecord = QueuedVariant<EventRecord>::type;
static_assert(sizeof(QueuedRecord) <= kQueuedInlineBytes + 8, "a queued record is an op timing and its index");

namespace detail {
template <class T>
Queued<T> to_queued(T&& v) {
    if constexpr (std::is_same_v<Queued<T>, T>)
        return std::move(v);
    else
        return std::make_unique<T>(std::move(v));
}
template <class T>
T from_queued(T&& v) {
    return std::move(v);
}
template <class T>
T from_queued(std::unique_ptr<T>&& p) {
    return std::move(*p);
}
}  // namespace detail

inline QueuedRecord to_queued(EventRecord&& r) {
    return std::visit([](auto&& v) { return QueuedRecord(detail::to_queued(std::move(v))); }, std::move(r));
}

inline EventRecord from_queued(QueuedRecord&& q) {
    return std::visit([](auto&& v) { return EventRecord(detail::from_queued(std::move(v))); }, std::move(q));
}

}  // namespace dyllm
