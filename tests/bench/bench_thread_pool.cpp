// Benchmark of the thread pool's hand-off: the cost of one parallel_for over trivial tasks (wake, run, join), and the
// time of the same streaming work (an elementwise product) on one thread and split over the pool, as a task per row
// and as one row range per thread (the engine's row-wise ops), to set kMinSplitWork (kernels/cpu/thread_pool.h).
// Prints one line per configuration.
#include <chrono>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "kernels/cpu/thread_pool.h"

using namespace dyllm::cpu;

namespace {

double now_us() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main() {
    ThreadPool pool2(2), pool1(1);
    {
        volatile int64_t sink = 0;
        const int        reps = 20000;
        const double     t0   = now_us();
        for (int r = 0; r < reps; ++r) pool2.parallel_for(2, [&](int64_t t, int) { sink = sink + t; });
        std::printf("hand-off: %.2f us per parallel_for of 2 trivial tasks (2 threads)\n", (now_us() - t0) / reps);
    }
    for (int64_t n :
         {int64_t(1) << 12, int64_t(1) << 14, int64_t(1) << 16, int64_t(1) << 17, int64_t(1) << 18, int64_t(1) << 20}) {
        const int64_t      cols = 512, rows = n / cols;
        std::vector<float> g(size_t(n), 0.5f), u(size_t(n), 1.5f), y(static_cast<size_t>(n), 0.0f);
        const int          reps = int(std::max<int64_t>(20, (int64_t(1) << 26) / n));
        // 0: one thread; 1: two threads, one task per row (handed out from the shares, stealing allowed); 2: two
        // threads, one contiguous row range each (parallel_rows_warm, as the engine's row-wise elementwise ops split).
        double best[3];
        auto   body = [&](int64_t r0, int64_t r1) {
            for (int64_t i = r0 * cols; i < r1 * cols; ++i) y[size_t(i)] = g[size_t(i)] * u[size_t(i)];
        };
        for (int which = 0; which < 3; ++which) {
            ThreadPool& pool = which == 0 ? pool1 : pool2;
            best[which]      = 1e30;
            for (int trial = 0; trial < 5; ++trial) {
                const double t0 = now_us();
                for (int r = 0; r < reps; ++r) {
                    if (which < 2)
                        pool.parallel_for(rows, [&](int64_t i, int) { body(i, i + 1); });
                    else
                        pool.parallel_rows_warm(rows, int64_t(1) << 40, body);  // work far above any bound: split
                }
                best[which] = std::min(best[which], (now_us() - t0) / reps);
            }
        }
        std::printf(
            "elementwise n=%7lld: 1 thread %8.2f us | 2 threads, a task per row %8.2f us (%.2fx) | 2 threads, "
            "a row range each %8.2f us (%.2fx)\n",
            (long long)n, best[0], best[1], best[0] / best[1], best[2], best[0] / best[2]);
    }
    return 0;
}
