// SpscQueue: FIFO order and capacity on one thread; under two threads no loss and order kept while the consumer keeps
// up; an exact drop count when the consumer is stalled and the producer overruns the capacity; blocks reused while the
// consumer keeps up. The threaded cases run with blocks of 1, 3 and 256 slots, so items cross block boundaries often,
// at odd offsets and (256) rarely.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "instrumentation/spsc_queue.h"

using dyllm::SpscQueue;

TEST_CASE("SpscQueue: FIFO order, exact capacity, size", "[instr][spsc]") {
    const size_t   slots = GENERATE(1, 2, 256);  // every item its own block, a boundary mid-way, one block
    SpscQueue<int> q(3, slots);
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
    CHECK(q.push(4));  // room again after a pop
    for (int want : {2, 3, 4}) {
        REQUIRE(q.pop(out));
        CHECK(out == want);
    }
    CHECK_FALSE(q.pop(out));
    CHECK(q.size() == 0);
}

TEST_CASE("SpscQueue: zero capacity is rejected", "[instr][spsc]") {
    CHECK_THROWS_AS(SpscQueue<int>(0), std::invalid_argument);
    CHECK_THROWS_AS(SpscQueue<int>(4, 0), std::invalid_argument);
}

TEST_CASE("SpscQueue: a consumer that keeps up cycles through two blocks; a stalled one takes what the capacity needs",
          "[instr][spsc]") {
    SpscQueue<int> q(1000, 4);
    int            out = -1, next = 0;
    // Three items in, three out, 10000 times: the emptied block goes back to the free stack and is the next one taken.
    for (int round = 0; round < 10000; ++round) {
        for (int i = 0; i < 3; ++i) REQUIRE(q.push(round * 3 + i));
        for (int i = 0; i < 3; ++i) {
            REQUIRE(q.pop(out));
            REQUIRE(out == next++);
        }
    }
    CHECK(q.blocks() <= 2);
    // Nobody pops: 1000 items fill 250 blocks; the 1001st is refused; the blocks are at most ceil(1000 / 4) + 1.
    int pushed = 0;
    while (q.push(int(next + pushed))) ++pushed;
    CHECK(pushed == 1000);
    CHECK(q.size() == 1000);
    CHECK(q.blocks() <= 251);
    for (int i = 0; i < pushed; ++i) {
        REQUIRE(q.pop(out));
        REQUIRE(out == next + i);
    }
    CHECK_FALSE(q.pop(out));
}

TEST_CASE("SpscQueue: items left in several blocks are destroyed with the queue", "[instr][spsc]") {
    auto counter = std::make_shared<int>(0);
    {
        SpscQueue<std::shared_ptr<int>> q(100, 3);
        for (int i = 0; i < 10; ++i) CHECK(q.push(std::shared_ptr<int>(counter)));
        std::shared_ptr<int> out;
        for (int i = 0; i < 4; ++i) REQUIRE(q.pop(out));  // the head is now mid-way through the second block
        out.reset();
        CHECK(counter.use_count() == 7);
    }
    CHECK(counter.use_count() == 1);
}

TEST_CASE("SpscQueue: move-only and non-trivial element types; leftovers destroyed", "[instr][spsc]") {
    auto counter = std::make_shared<int>(0);
    {
        SpscQueue<std::shared_ptr<int>> q(4);
        CHECK(q.push(std::shared_ptr<int>(counter)));
        CHECK(q.push(std::shared_ptr<int>(counter)));
        CHECK(counter.use_count() == 3);
        std::shared_ptr<int> out;
        REQUIRE(q.pop(out));
        CHECK(counter.use_count() == 3);  // moved out: still 3 owners (out + one queued + counter)
        out.reset();
        CHECK(counter.use_count() == 2);
    }
    CHECK(counter.use_count() == 1);  // the queue's destructor released the element never popped

    SpscQueue<std::unique_ptr<std::string>> q(2);
    CHECK(q.push(std::make_unique<std::string>("a")));
    std::unique_ptr<std::string> s;
    REQUIRE(q.pop(s));
    CHECK(*s == "a");
}

TEST_CASE("SpscQueue: two threads, consumer keeps up: nothing lost, order kept", "[instr][spsc][threads]") {
    // A small ring and many items force thousands of wrap-arounds and full/empty transitions; the producer retries
    // when full (it is the consumer that is slow here, not stalled), so every item must arrive exactly once, in order.
    constexpr uint64_t  kItems = 200'000;
    const size_t        slots  = GENERATE(1, 3, 256);
    SpscQueue<uint64_t> q(64, slots);
    std::atomic<bool>   producer_done{false};
    uint64_t            retries = 0;
    std::thread         producer([&] {
        for (uint64_t i = 0; i < kItems; ++i) {
            uint64_t v = i;
            while (!q.push(std::move(v))) {
                ++retries;
                std::this_thread::yield();
            }
        }
        producer_done = true;
    });
    uint64_t            expected = 0, out_of_order = 0;
    uint64_t            v;
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

TEST_CASE("SpscQueue: stalled consumer, exact drop count; order of the kept items", "[instr][spsc][threads]") {
    constexpr size_t      kCapacity = 1000;
    constexpr uint64_t    kItems    = 25'000;
    const size_t          slots     = GENERATE(1, 3, 256);
    SpscQueue<uint64_t>   q(kCapacity, slots);
    std::atomic<bool>     release{false};
    std::atomic<uint64_t> consumed{0};
    std::vector<uint64_t> got;
    // The consumer thread exists but does not pop until the producer has pushed everything (stalled UI).
    std::thread consumer([&] {
        while (!release.load(std::memory_order_acquire)) std::this_thread::yield();
        uint64_t v;
        while (q.pop(v)) got.push_back(v);
        consumed = got.size();
    });
    uint64_t    dropped = 0;
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

TEST_CASE("SpscQueue: concurrent overrun with a slow consumer: pushed = popped + dropped", "[instr][spsc][threads]") {
    constexpr uint64_t    kItems = 100'000;
    const size_t          slots  = GENERATE(1, 3, 256);
    SpscQueue<uint64_t>   q(16, slots);
    std::atomic<bool>     done{false};
    std::vector<uint64_t> got;
    got.reserve(kItems);
    std::thread consumer([&] {
        uint64_t v;
        for (;;) {
            if (q.pop(v))
                got.push_back(v);
            else if (done.load(std::memory_order_acquire)) {
                while (q.pop(v)) got.push_back(v);
                break;
            }
        }
    });
    uint64_t    dropped = 0;
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
