// SpscRing: FIFO order and capacity on one thread; under two threads no loss and order kept while the consumer keeps
// up; an exact drop count when the consumer is stalled and the producer overruns the capacity.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "instrumentation/ring_buffer.h"

using dyllm::SpscRing;

TEST_CASE("SpscRing: FIFO order, exact capacity, size", "[instr][ring]") {
    SpscRing<int> q(3);
    CHECK(q.capacity() == 3);
    CHECK(q.size() == 0);
    int out = -1;
    CHECK_FALSE(q.pop(out));
    CHECK(q.push(1));
    CHECK(q.push(2));
    CHECK(q.push(3));
    CHECK(q.size() == 3);
    int v = 4;
    CHECK_FALSE(q.push(std::move(v)));  // full: every one of the 3 slots is usable, a 4th is not
    CHECK(q.size() == 3);
    REQUIRE(q.pop(out));
    CHECK(out == 1);
    CHECK(q.push(4));  // wraps around
    for (int want : {2, 3, 4}) {
        REQUIRE(q.pop(out));
        CHECK(out == want);
    }
    CHECK_FALSE(q.pop(out));
    CHECK(q.size() == 0);
}

TEST_CASE("SpscRing: zero capacity is rejected", "[instr][ring]") {
    CHECK_THROWS_AS(SpscRing<int>(0), std::invalid_argument);
}

TEST_CASE("SpscRing: move-only and non-trivial element types; leftovers destroyed", "[instr][ring]") {
    auto counter = std::make_shared<int>(0);
    {
        SpscRing<std::shared_ptr<int>> q(4);
        CHECK(q.push(std::shared_ptr<int>(counter)));
        CHECK(q.push(std::shared_ptr<int>(counter)));
        CHECK(counter.use_count() == 3);
        std::shared_ptr<int> out;
        REQUIRE(q.pop(out));
        CHECK(counter.use_count() == 3);  // moved out: still 3 owners (out + one queued + counter)
        out.reset();
        CHECK(counter.use_count() == 2);
    }
    CHECK(counter.use_count() == 1);  // the ring's destructor released the element never popped

    SpscRing<std::unique_ptr<std::string>> q(2);
    CHECK(q.push(std::make_unique<std::string>("a")));
    std::unique_ptr<std::string> s;
    REQUIRE(q.pop(s));
    CHECK(*s == "a");
}

TEST_CASE("SpscRing: two threads, consumer keeps up: nothing lost, order kept", "[instr][ring][threads]") {
    // A small ring and many items force thousands of wrap-arounds and full/empty transitions; the producer retries
    // when full (it is the consumer that is slow here, not stalled), so every item must arrive exactly once, in order.
    constexpr uint64_t kItems = 200'000;
    SpscRing<uint64_t> q(64);
    std::atomic<bool>  producer_done{false};
    uint64_t           retries = 0;
    std::thread producer([&] {
        for (uint64_t i = 0; i < kItems; ++i) {
            uint64_t v = i;
            while (!q.push(std::move(v))) {
                ++retries;
                std::this_thread::yield();
            }
        }
        producer_done = true;
    });
    uint64_t expected = 0, out_of_order = 0;
    uint64_t v;
    while (expected < kItems) {
        if (q.pop(v)) {
            if (v != expected) ++out_of_order;
            expected = v + 1;
        } else if (producer_done && q.size() == 0) {
            break;
        }
    }
    producer.join();
    CHECK(out_of_order == 0);
    CHECK(expected == kItems);
    CHECK_FALSE(q.pop(v));
}

TEST_CASE("SpscRing: stalled consumer, exact drop count; order of the kept items", "[instr][ring][threads]") {
    constexpr size_t   kCapacity = 1000;
    constexpr uint64_t kItems    = 25'000;
    SpscRing<uint64_t> q(kCapacity);
    std::atomic<bool>  release{false};
    std::atomic<uint64_t> consumed{0};
    std::vector<uint64_t> got;
    // The consumer thread exists but does not pop until the producer has pushed everything (stalled UI).
    std::thread consumer([&] {
        while (!release.load(std::memory_order_acquire)) std::this_thread::yield();
        uint64_t v;
        while (q.pop(v)) got.push_back(v);
        consumed = got.size();
    });
    uint64_t dropped = 0;
    for (uint64_t i = 0; i < kItems; ++i) {
        uint64_t v = i;
        if (!q.push(std::move(v))) ++dropped;
    }
    CHECK(q.size() == kCapacity);
    release.store(true, std::memory_order_release);
    consumer.join();
    CHECK(dropped == kItems - kCapacity);
    REQUIRE(got.size() == kCapacity);
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == i);  // the first kCapacity items survive, in order
}

TEST_CASE("SpscRing: concurrent overrun with a slow consumer: pushed = popped + dropped", "[instr][ring][threads]") {
    constexpr uint64_t kItems = 100'000;
    SpscRing<uint64_t> q(16);
    std::atomic<bool>  done{false};
    std::vector<uint64_t> got;
    got.reserve(kItems);
    std::thread consumer([&] {
        uint64_t v;
        for (;;) {
            if (q.pop(v)) got.push_back(v);
            else if (done.load(std::memory_order_acquire)) {
                while (q.pop(v)) got.push_back(v);
                break;
            }
        }
    });
    uint64_t dropped = 0;
    for (uint64_t i = 0; i < kItems; ++i) {
        uint64_t v = i;
        if (!q.push(std::move(v))) ++dropped;
    }
    done.store(true, std::memory_order_release);
    consumer.join();
    CHECK(got.size() + dropped == kItems);
    bool increasing = true;
    for (size_t i = 1; i < got.size(); ++i) increasing = increasing && got[i] > got[i - 1];
    CHECK(increasing);  // drops leave gaps, never reorderings or duplicates
}
