// Memory read bandwidth, the streaming floor of a weight-bound step: T threads sum disjoint parts of a buffer much
// larger than the caches (as a sparse step reads each weight once), best of N passes.
// Not a test: prints one JSON object, {"threads": T, "gb": size, "gb_per_s": best}.
//   bench_stream_read [--gb 2] [--threads 2] [--passes 5]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

// Sums 64-bit words in 8 independent lanes (enough loads in flight to saturate a core's share of the bandwidth;
// the compiler vectorises the inner loop).
uint64_t sum_words(const uint64_t* p, size_t n) {
    uint64_t a[8] = {};
    size_t   i    = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; ++l) a[l] += p[i + size_t(l)];
    for (; i < n; ++i) a[0] += p[i];
    uint64_t s = 0;
    for (uint64_t v : a) s += v;
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    double gb      = 2.0;
    int    threads = 2, passes = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--gb")
            gb = std::atof(argv[i + 1]);
        else if (a == "--threads")
            threads = std::atoi(argv[i + 1]);
        else if (a == "--passes")
            passes = std::atoi(argv[i + 1]);
        else {
            std::fprintf(stderr, "usage: bench_stream_read [--gb 2] [--threads 2] [--passes 5]\n");
            return 2;
        }
    }
    if (gb <= 0 || threads < 1 || passes < 1) {
        std::fprintf(stderr, "bench_stream_read: --gb, --threads and --passes must be positive\n");
        return 2;
    }
    const size_t          n = size_t(gb * 1e9) / sizeof(uint64_t);
    std::vector<uint64_t> buf(n);
    for (size_t i = 0; i < n; ++i) buf[i] = i;  // touched: every page resident before timing
    double                best = 0;
    std::vector<uint64_t> sums(static_cast<size_t>(threads));
    for (int p = 0; p < passes; ++p) {
        const auto               t0 = std::chrono::steady_clock::now();
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; ++t) {
            ts.emplace_back([&, t] {
                const size_t lo = n * size_t(t) / size_t(threads), hi = n * size_t(t + 1) / size_t(threads);
                sums[size_t(t)] += sum_words(buf.data() + lo, hi - lo);
            });
        }
        for (auto& th : ts) th.join();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best           = std::max(best, double(n * sizeof(uint64_t)) / s * 1e-9);
    }
    uint64_t check = 0;
    for (uint64_t s : sums) check ^= s;
    std::printf("{\"threads\": %d, \"gb\": %.2f, \"gb_per_s\": %.2f, \"check\": %llu}\n", threads, gb, best,
                (unsigned long long)check);
    return 0;
}
