// A job that stalls a two-thread pool past its stall debt (kernels/cpu/thread_pool.h), so the pool backs off: the next
// jobs run inline on the caller for kPoolBackoffMinNs. Shared by the pool's tests and the packed GEMM's.
#pragma once
#include <atomic>
#include <chrono>
#include <thread>

#include "kernels/cpu/thread_pool.h"

namespace dyllm::test {

// Task 1 (the worker's share) runs on the worker: the caller's task 0 waits until it has begun, so the caller cannot
// take it. It then keeps the worker 50 ms: beyond kPoolStallNs, twice the caller's own share and the stall debt the
// pool tolerates (kPoolStallDebtNs).
inline void stall_worker(cpu::ThreadPool& pool) {
    std::atomic<bool> worker_started{false};
    pool.parallel_for(2, [&](int64_t t, int) {
        if (t == 0) {
            while (!worker_started.load()) std::this_thread::yield();
            return;
        }
        worker_started.store(true);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    });
}

}  // namespace dyllm::test
