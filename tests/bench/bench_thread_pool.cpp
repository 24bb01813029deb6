// Benchmark of the thread pool's hand-off: the cost of one parallel_for over trivial tasks (wake, run, join), and the
// time of the same streaming work (an elementwise product) on one thread and split over the pool, to set kMinSplitWork
// (kernels/cpu/thread_pool.h). Prints one line per configuration.
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
    for (int64_t n : {int64_t(1) << 12, int64_t(1) << 14, int64_t(1) << 16, int64_t(1) << 17, int64_t(1) << 18,
                      int64_t(1) << 20}) {
        const int64_t      cols = 512, rows = n / cols;
        std::vector<float> g(size_t(n), 0.5f), u(size_t(n), 1.5f), y(static_cast<size_t>(n), 0.0f);
        const int          reps = int(std::max<int64_t>(20, (int64_t(1) << 26) / n));
        double             best[2];
        for (int which = 0; which < 2; ++which) {
            ThreadPool& pool = which == 0 ? pool1 : pool2;
            best[which]      = 1e30;
            for (int trial = 0; trial < 5; ++trial) {
                const double t0 = now_us();
                for (int r = 0; r < reps; ++r)
                    pool.parallel_for(rows, [&](int64_t i, int) {  // one task per row, always split at 2 threads
                        for (int64_t c = 0; c < cols; ++c) y[size_t(i * cols + c)] = g[size_t(i * cols + c)] * u[size_t(i * cols + c)];
                    });
                best[which] = std::min(best[which], (now_us() - t0) / reps);
            }
        }
        std::printf("elementwise n=%7lld: 1 thread %8.2f us, split over 2 threads %8.2f us (%.2fx)\n", (long long)n,
                    best[0], best[1], best[0] / best[1]);
    }
    return 0;
}
