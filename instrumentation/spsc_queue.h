// SpscQueue: a bounded lock-free single-producer / single-consumer FIFO. The engine thread pushes and never blocks
// (push fails when `capacity` items are queued, the caller counts the drop); the UI thread pops. Header-only.
//
// The items live in blocks of `block_slots` chained in FIFO order. The consumer hands each block it has emptied back
// to a free stack, and the producer takes the most recently freed one when it needs a new block: while the consumer
// keeps up, the producer writes into a few warm blocks, not a capacity-sized ring whose slots are cold by the time it
// comes round to them again (QueueSink's 1 << 16 records of 80 bytes: 5.2 MB, which every op timing pushed into it
// pulled back from memory line by line: bench_instr_overhead, tiny-llada, +8-11% against +6-7% with a 4096-slot ring).
// Blocks are allocated when the consumer falls behind, up to what `capacity` needs, and kept until destruction.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

namespace dyllm {

// Destructive-interference size: 64 bytes on x86-64 and most ARM cores. std::hardware_destructive_interference_size
// is avoided on purpose: g++ 12 warns (-Winterference-size) that its value may differ between translation units.
inline constexpr size_t kCacheLine = 64;

// Ordering: the producer publishes each item with a release store of its block's count (and a new block with a release
// store of the full block's `next`); the consumer acquires them. The queued total is pushed_ - popped_, two
// free-running 64-bit counters each side keeps on its own line, with a cached copy of the other side's. Blocks move
// between the sides only through the free stack's mutex (once per block_slots items), which orders their reuse.
template <class T>
class SpscQueue {
public:
    static constexpr size_t kDefaultBlockSlots = 256;

    explicit SpscQueue(size_t capacity, size_t block_slots = kDefaultBlockSlots)
        : capacity_(capacity), block_slots_(block_slots) {
        if (capacity == 0) throw std::invalid_argument("SpscQueue: capacity must be at least 1");
        if (block_slots == 0) throw std::invalid_argument("SpscQueue: block_slots must be at least 1");
        // At most ceil(capacity / block_slots) blocks hold queued items, plus the consumer's partly emptied one.
        max_blocks_ = (capacity + block_slots - 1) / block_slots + 1;
        blocks_.reserve(max_blocks_);
        free_.reserve(max_blocks_);
        head_ = tail_ = new_block();
    }
    ~SpscQueue() {
        // Destroy whatever the consumer never popped (both threads are done by now).
        size_t i = head_i_;
        for (Block* b = head_; b; b = b->next.load(std::memory_order_acquire), i = 0)
            for (const uint32_t n = b->count.load(std::memory_order_acquire); i < n; ++i) b->slot(i)->~T();
    }
    SpscQueue(const SpscQueue&)            = delete;
    SpscQueue& operator=(const SpscQueue&) = delete;

    // Producer only. Moves v into the queue; returns false (and leaves v untouched) when `capacity` items are queued.
    bool push(T&& v) {
        const uint64_t pushed = pushed_.load(std::memory_order_relaxed);
        if (pushed - popped_cache_ >= capacity_) {
            popped_cache_ = popped_.load(std::memory_order_acquire);
            if (pushed - popped_cache_ >= capacity_) return false;
        }
        if (tail_n_ == block_slots_) {
            Block* b = take_block();
            if (!b) return false;  // unreachable with max_blocks_ as sized; kept as a guard
            tail_->next.store(b, std::memory_order_release);
            tail_   = b;
            tail_n_ = 0;
        }
        new (tail_->slot(tail_n_)) T(std::move(v));
        ++tail_n_;
        tail_->count.store(uint32_t(tail_n_), std::memory_order_release);
        pushed_.store(pushed + 1, std::memory_order_release);
        return true;
    }

    // Consumer only. Moves the oldest item into out; returns false when the queue is empty.
    bool pop(T& out) {
        Block*   b = head_;
        uint32_t n = b->count.load(std::memory_order_acquire);
        if (head_i_ == n) {
            if (n < block_slots_) return false;  // the producer is still filling this block
            Block* next = b->next.load(std::memory_order_acquire);
            if (!next) return false;
            head_   = next;
            head_i_ = 0;
            recycle(b);
            b = next;
            n = b->count.load(std::memory_order_acquire);
            if (n == 0) return false;
        }
        T* p = b->slot(head_i_);
        out  = std::move(*p);
        p->~T();
        ++head_i_;
        popped_.store(popped_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
        return true;
    }

    // Number of queued items; exact when neither side is running, a snapshot otherwise.
    size_t size() const {
        const uint64_t popped = popped_.load(std::memory_order_acquire);
        return size_t(pushed_.load(std::memory_order_acquire) - popped);
    }
    size_t capacity() const { return capacity_; }
    // Blocks allocated so far (at most ceil(capacity / block_slots) + 1): how far the consumer has fallen behind.
    size_t blocks() const {
        std::lock_guard<std::mutex> lk(free_mu_);
        return blocks_.size();
    }

private:
    struct Slot {
        alignas(T) unsigned char storage[sizeof(T)];
    };
    struct alignas(kCacheLine) Block {
        std::atomic<uint32_t>   count{0};  // slots written (producer: release; consumer: acquire)
        std::atomic<Block*>     next{nullptr};
        std::unique_ptr<Slot[]> slots;
        T*                      slot(size_t i) { return std::launder(reinterpret_cast<T*>(slots[i].storage)); }
    };

    Block* new_block() {  // under free_mu_, or in the constructor
        auto b   = std::make_unique<Block>();
        b->slots = std::make_unique<Slot[]>(block_slots_);
        blocks_.push_back(std::move(b));
        return blocks_.back().get();
    }
    // Producer: the most recently freed block (the warmest), else a new one while fewer than max_blocks_ exist.
    Block* take_block() {
        std::lock_guard<std::mutex> lk(free_mu_);
        if (!free_.empty()) {
            Block* b = free_.back();
            free_.pop_back();
            return b;
        }
        return blocks_.size() < max_blocks_ ? new_block() : nullptr;
    }
    // Consumer: b is emptied and the producer has moved past it (its next is set): reset it and free it.
    void recycle(Block* b) {
        b->count.store(0, std::memory_order_relaxed);
        b->next.store(nullptr, std::memory_order_relaxed);
        std::lock_guard<std::mutex> lk(free_mu_);
        free_.push_back(b);
    }

    const size_t capacity_;
    const size_t block_slots_;
    size_t       max_blocks_ = 0;

    mutable std::mutex                  free_mu_;
    std::vector<std::unique_ptr<Block>> blocks_;  // every block (owner)
    std::vector<Block*>                 free_;    // emptied blocks, most recently freed last

    // Producer-owned line: its block, its fill, its count and its cached view of the consumer's.
    alignas(kCacheLine) std::atomic<uint64_t> pushed_{0};
    Block*   tail_         = nullptr;
    size_t   tail_n_       = 0;
    uint64_t popped_cache_ = 0;
    // Consumer-owned line.
    alignas(kCacheLine) std::atomic<uint64_t> popped_{0};
    Block* head_   = nullptr;
    size_t head_i_ = 0;
    // Keep whatever follows this object off the consumer's line.
    alignas(kCacheLine) char pad_[kCacheLine] = {};
};

}  // namespace dyllm
