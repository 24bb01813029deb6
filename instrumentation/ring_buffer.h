// SpscRing: a bounded lock-free single-producer / single-consumer queue. The engine thread pushes and
// never blocks (push fails when full, the caller counts the drop); the UI thread pops. Header-only.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <utility>

namespace dyllm {

// Destructive-interference size: 64 bytes on x86-64 and most ARM cores. std::hardware_destructive_interference_size
// is avoided on purpose: g++ 12 warns (-Winterference-size) that its value may differ between translation units.
inline constexpr size_t kCacheLine = 64;

// Indices are free-running 64-bit counters (head = items popped, tail = items pushed), so "full" is
// tail - head == capacity and every one of the `capacity` slots is usable; 2^64 pushes never wrap in practice.
// The producer publishes a slot with a release store of tail_, the consumer acquires it, and symmetrically for head_.
// Each side keeps a cached copy of the other side's index so the common case touches only its own cache line.
template <class T>
class SpscRing {
public:
    explicit SpscRing(size_t capacity) : capacity_(capacity) {
        if (capacity == 0) throw std::invalid_argument("SpscRing: capacity must be at least 1");
        slots_ = std::make_unique<Slot[]>(capacity);
    }
    ~SpscRing() {
        // Destroy whatever the consumer never popped (both threads are done by now).
        const uint64_t tail = tail_.load(std::memory_order_acquire);
        for (uint64_t i = head_.load(std::memory_order_acquire); i != tail; ++i) slots_[i % capacity_].ptr()->~T();
    }
    SpscRing(const SpscRing&)            = delete;
    SpscRing& operator=(const SpscRing&) = delete;

    // Producer only. Moves v into the queue; returns false (and leaves v untouched) when the queue is full.
    bool push(T&& v) {
        const uint64_t tail = tail_.load(std::memory_order_relaxed);
        if (tail - head_cache_ >= capacity_) {
            head_cache_ = head_.load(std::memory_order_acquire);
            if (tail - head_cache_ >= capacity_) return false;
        }
        new (slots_[tail % capacity_].ptr()) T(std::move(v));
        tail_.store(tail + 1, std::memory_order_release);
        return true;
    }

    // Consumer only. Moves the oldest element into out; returns false when the queue is empty.
    bool pop(T& out) {
        const uint64_t head = head_.load(std::memory_order_relaxed);
        if (head == tail_cache_) {
            tail_cache_ = tail_.load(std::memory_order_acquire);
            if (head == tail_cache_) return false;
        }
        T* p = slots_[head % capacity_].ptr();
        out  = std::move(*p);
        p->~T();
        head_.store(head + 1, std::memory_order_release);
        return true;
    }

    // Number of queued elements; exact when neither side is running, a snapshot otherwise.
    size_t size() const {
        const uint64_t head = head_.load(std::memory_order_acquire);
        const uint64_t tail = tail_.load(std::memory_order_acquire);
        return size_t(tail - head);
    }
    size_t capacity() const { return capacity_; }

private:
    struct Slot {
        alignas(T) unsigned char storage[sizeof(T)];
        T* ptr() { return std::launder(reinterpret_cast<T*>(storage)); }
    };

    const size_t            capacity_;
    std::unique_ptr<Slot[]> slots_;
    // Producer-owned line: its index and its cached view of the consumer's index.
    alignas(kCacheLine) std::atomic<uint64_t> tail_{0};
    uint64_t head_cache_ = 0;
    // Consumer-owned line.
    alignas(kCacheLine) std::atomic<uint64_t> head_{0};
    uint64_t tail_cache_ = 0;
    // Keep whatever follows this object off the consumer's line.
    alignas(kCacheLine) char pad_[kCacheLine] = {};
};

}  // namespace dyllm
