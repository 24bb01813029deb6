// When a few-row product pays for a hand-out (not a test): small_gemm on a k-major weight run on the calling thread
// alone, against the same product split by output panels over a 2-thread pool (kmajor_slice, as PackedGemm::matmul
// splits it), at 1-32 rows of the built-in models' weight shapes. Weights cold: each call reads another of 64 MiB of
// copies (from L3 or memory, as in a decode step, whose weights do not fit L2); the two forms alternate call by call
// and read different copies, so a slow phase of a shared host or a warm cache favours neither. Medians of many calls.
// The figures behind kSmallSplitWeightBytes (kernels/cpu/packed_gemm.h).
//   bench_small_split [--calls 600] [--rows 1,2,4,8,16,32]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/small_gemm.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/bench_args.h"

using namespace dyllm;
using namespace dyllm::cpu;
using dyllm::test::cpu_model;
using dyllm::test::parse_ints;

namespace {

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Shape {
    const char* name;
    int64_t     m, k;  // weight [m, k]
};

}  // namespace

int main(int argc, char** argv) {
    int              calls = 600;
    std::vector<int> rows  = {1, 2, 4, 8, 16, 32};
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--calls") && i + 1 < argc)
            calls = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--rows") && i + 1 < argc)
            rows = parse_ints(argv[++i]);
        else {
            std::fprintf(stderr, "usage: %s [--calls N] [--rows 1,2,4,8,16,32]\n", argv[0]);
            return 2;
        }
    }
    const Shape shapes[] = {{"tiny-llada q/k/v/o", 128, 128}, {"tiny-llada gate/up", 344, 128},
                            {"tiny-llada down", 128, 344},    {"hidden-256 q/k/v/o", 256, 256},
                            {"hidden-256 gate/up", 688, 256}, {"hidden-256 down", 256, 688}};
    ThreadPool  pool(2);
    std::printf("# CPU: %s; small_gemm, 1 thread vs split over 2; cold weights; median of %d alternating calls\n",
                cpu_model().c_str(), calls);
    std::printf("# %-20s %5s %4s | %9s | %9s | %s\n", "weight", "KiB", "rows", "1 thr us", "split us",
                "1 thread / split");
    std::mt19937                    rng(3);
    std::normal_distribution<float> nd(0.0f, 0.05f);
    for (const Shape& s : shapes) {
        const int64_t             copies = std::max<int64_t>(2, (int64_t(64) << 20) / (s.m * s.k * 4));
        std::vector<KMajorWeight> ws;
        std::vector<float>        w(size_t(s.m * s.k));
        for (int64_t c = 0; c < copies; ++c) {
            for (float& f : w) f = nd(rng);
            ws.push_back(make_kmajor(ConstMat{w.data(), ElemType::F32, s.m, s.k, s.k}));
        }
        for (int n : rows) {
            std::vector<float> x(size_t(n * s.k)), y(size_t(n * s.m));
            for (float& f : x) f = nd(rng) * 20.0f;
            const CMatF         xm{x.data(), n, s.k, s.k};
            std::vector<double> t_one, t_split;
            for (int call = -2; call < calls; ++call) {  // two warm-up calls of each
                const KMajorWeight& a   = ws[size_t((2 * (call + 2)) % copies)];
                const KMajorWeight& b   = ws[size_t((2 * (call + 2) + 1) % copies)];
                auto                one = [&] {
                    const double t0 = now_s();
                    small_gemm(xm, a, nullptr, MatF{y.data(), n, s.m, s.m});
                    if (call >= 0) t_one.push_back(now_s() - t0);
                };
                auto split = [&] {
                    const double  t0 = now_s();
                    const int64_t al = kmajor_slice_align(b), groups = (b.m + al - 1) / al;
                    const int64_t per = (groups + 1) / 2 * al;
                    pool.parallel_for(2, [&](int64_t i, int) {
                        const int64_t o0 = i * per, o1 = std::min(b.m, o0 + per);
                        if (o0 < o1)
                            small_gemm(xm, kmajor_slice(b, o0, o1), nullptr, MatF{y.data() + o0, n, o1 - o0, s.m});
                    });
                    if (call >= 0) t_split.push_back(now_s() - t0);
                };
                if (call % 2) {
                    one();
                    split();
                } else {
                    split();
                    one();
                }
            }
            const double a = median(t_one), b = median(t_split);
            std::printf("  %-20s %5lld %4d | %9.1f | %9.1f | %.2f\n", s.name, (long long)(s.m * s.k * 4 / 1024), n,
                        a * 1e6, b * 1e6, a / b);
        }
    }
    return 0;
}
