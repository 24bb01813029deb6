// Cross-core ping-pong (app/model/core_latency.h).
#include "app/model/core_latency.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace dyllm::app {

namespace {

using Clock = std::chrono::steady_clock;

// The shared line: the caller writes odd values, the partner answers with the next even one. Alone on its cache line
// (stop has its own), so nothing else moves with it.
struct Ball {
    alignas(64) std::atomic<uint64_t> value{0};
    alignas(64) std::atomic<bool> stop{false};
};

// Spins until ball.value == want; false when `stop` was raised or the deadline passed first (the clock is read once
// per 1024 spins, so a hand-off that does arrive is not slowed by it).
bool wait_for(const Ball& ball, uint64_t want, Clock::time_point deadline) {
    for (uint32_t spins = 1;; ++spins) {
        if (ball.value.load(std::memory_order_acquire) == want) return true;
        if ((spins & 1023) == 0 && (ball.stop.load(std::memory_order_relaxed) || Clock::now() > deadline)) return false;
    }
}

}  // namespace

CoreLatency measure_core_latency(int round_trips, int batches, double batch_limit_ms) {
    CoreLatency out;
    if (round_trips < 1 || batches < 1 || std::thread::hardware_concurrency() < 2) return out;
    Ball       ball;
    const auto limit = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double, std::milli>(batch_limit_ms * batches + 1000.0));
    const Clock::time_point partner_deadline = Clock::now() + limit;
    std::thread             partner([&] {
        for (uint64_t v = 1;; v += 2) {
            if (!wait_for(ball, v, partner_deadline)) return;
            ball.value.store(v + 1, std::memory_order_release);
        }
    });
    std::vector<double>     per_trip_ns;
    uint64_t                v  = 0;
    bool                    ok = true;
    // One untimed batch first: the partner thread's start, and both threads' first trips, are not the hand-off.
    for (int b = -1; b < batches && ok; ++b) {
        const Clock::time_point t0 = Clock::now();
        const Clock::time_point deadline =
            t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(batch_limit_ms));
        for (int i = 0; i < round_trips && ok; ++i) {
            ball.value.store(v + 1, std::memory_order_release);
            ok = wait_for(ball, v + 2, deadline);
            v += 2;
        }
        if (ok && b >= 0)
            per_trip_ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / round_trips);
    }
    ball.stop.store(true, std::memory_order_relaxed);
    partner.join();
    if (!ok || per_trip_ns.empty()) return out;
    std::nth_element(per_trip_ns.begin(), per_trip_ns.begin() + long(per_trip_ns.size() / 2), per_trip_ns.end());
    out.measured   = true;
    out.one_way_ns = per_trip_ns[per_trip_ns.size() / 2] / 2.0;
    return out;
}

}  // namespace dyllm::app
