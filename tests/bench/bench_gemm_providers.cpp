// GEMM provider benchmark (not a test): y = x W^T on the engine's weight shapes, x rows 1..512, per thread count:
// OpenBLAS sgemm on fp32 weights, today's bf16 path (cpu::matmul: panels widened to fp32 + sgemm), the packed
// provider (cpu::PackedGemm, oneDNN) on fp32 and bf16 weights packed once, and small_gemm on a k-major fp32 copy (one
// thread: the engine splits its products by outputs itself; shapes whose weight it would take, <= 1 MiB), hot (the
// same copy every call, in L2) and cold (a different one of 16 MiB of copies each call, from L3, as in a decode step,
// whose weights do not fit L2). One line per (shape, rows, threads).
//   bench_gemm_providers [--threads 1,2] [--rows 1,8,33,128,512] [--shapes tiny,h256,8b] [--budget S]
// The table and the choice it justifies: kernels/README.md "GEMM provider".
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/common/dtype_convert.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/packed_gemm.h"
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
double cpu_s() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

struct Timing {
    double wall = 0, cpu = 0;  // best of the repetitions, seconds
};

// One warm-up, then repetitions until 3 are done or `budget` seconds have passed; best wall and best CPU time per call
// (on a shared machine CPU time per core is the steadier figure). A repetition is a batch of
// back-to-back calls lasting about 2 ms, as the products of a decode follow each other: a single call of a few
// microseconds would time the clock and a pool worker's wake-up from sleep, not the product.
Timing best(double budget, const std::function<void()>& fn) {
    const double w = now_s();
    fn();
    const int    calls = int(std::clamp(2e-3 / std::max(now_s() - w, 1e-7), 1.0, 10000.0));
    Timing       t{1e30, 1e30};
    const double start = now_s();
    for (int r = 0; r < 3 && (r == 0 || now_s() - start < budget); ++r) {
        const double w0 = now_s(), c0 = cpu_s();
        for (int c = 0; c < calls; ++c) fn();
        t.wall = std::min(t.wall, (now_s() - w0) / calls);
        t.cpu  = std::min(t.cpu, (cpu_s() - c0) / calls);
    }
    return t;
}

struct Shape {
    const char* set;
    const char* name;
    int64_t     m, k;  // W: [m, k]
};

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> threads = {1, 2}, rows = {1, 8, 33, 128, 512};
    std::string      sets   = "tiny,h256,8b";
    double           budget = 0.5;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i], v = argv[i + 1];
        if (a == "--threads")
            threads = parse_ints(v);
        else if (a == "--rows")
            rows = parse_ints(v);
        else if (a == "--shapes")
            sets = v;
        else if (a == "--budget")
            budget = std::atof(v.c_str());
        else {
            std::fprintf(stderr, "bench_gemm_providers: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    const Shape shapes[] = {
        {"tiny", "tiny-llada q/k/v/o", 128, 128}, {"tiny", "tiny-llada gate/up", 344, 128},
        {"tiny", "tiny-llada down", 128, 344},    {"tiny", "tiny-llada lm_head", 374, 128},
        {"h256", "hidden-256 q/k/v/o", 256, 256}, {"h256", "hidden-256 gate/up", 688, 256},
        {"h256", "hidden-256 down", 256, 688},    {"8b", "8B q/k/v/o", 4096, 4096},
        {"8b", "8B gate/up", 12288, 4096},        {"8b", "8B down", 4096, 12288},
    };
    std::printf("# CPU: %s; %s; packed provider: %s\n", cpu_model().c_str(), blas_config().c_str(),
                PackedGemm::provider().empty() ? "none" : PackedGemm::provider().c_str());
    std::printf("# GFLOP/s by wall time (per core by CPU time in brackets); best of <= 3 runs after a warm-up\n");
    std::printf("# %-20s %5s %4s %2s | %-17s | %-17s | %-17s | %-17s | %-17s | %-17s\n", "shape", "m", "k", "n t",
                "OpenBLAS f32", "widen bf16+sgemm", "packed f32", "packed bf16", "small_gemm f32", "small_gemm cold");
    std::mt19937                    rng(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (const Shape& s : shapes) {
        if (sets.find(s.set) == std::string::npos) continue;
        std::vector<float>    wf(size_t(s.m * s.k));
        std::vector<uint16_t> wb(wf.size());
        for (size_t i = 0; i < wf.size(); ++i) {
            wb[i] = f32_to_bf16(nd(rng) * 0.02f);
            wf[i] = bf16_to_f32(wb[i]);
        }
        const ConstMat     wmf{wf.data(), ElemType::F32, s.m, s.k, s.k}, wmb{wb.data(), ElemType::BF16, s.m, s.k, s.k};
        const bool         small = wf.size() * sizeof(float) <= kSmallGemmMaxWeightBytes;
        const KMajorWeight wk    = small ? make_kmajor(wmf) : KMajorWeight{};
        std::vector<KMajorWeight> cold;  // copies of wk filling 16 MiB, read in turn
        if (small)
            for (size_t b = 0; b < (size_t(16) << 20); b += wk.bytes()) cold.push_back(make_kmajor(wmf));
        size_t next_cold = 0;
        for (int t : threads) {
            ThreadPool pool(t);
            blas_set_threads(t);
            PackedGemm                          gemm(t);
            std::string                         err;
            std::shared_ptr<const PackedWeight> pf, pb;
            if (PackedGemm::supports(ElemType::F32)) pf = gemm.pack(wmf, pool, &err);
            if (PackedGemm::supports(ElemType::BF16)) pb = gemm.pack(wmb, pool, &err);
            // OpenBLAS's own threads poll for a while after each call: measured between the packed provider's cells
            // they took the second core from the pool's worker (q/k/v/o, 33 rows, 2 threads: packed f32 4.4 GFLOP/s
            // against 74 on one thread). So the two sgemm columns are measured last, after the packed ones.
            std::vector<std::array<std::string, 6>> cells(rows.size());
            for (int pass = 0; pass < 2; ++pass) {
                for (size_t ri = 0; ri < rows.size(); ++ri) {
                    const int          n = rows[ri];
                    std::vector<float> x(size_t(n) * size_t(s.k)), y(size_t(n) * size_t(s.m));
                    for (float& v : x) v = nd(rng);
                    const CMatF  xm{x.data(), n, s.k, s.k};
                    const MatF   ym{y.data(), n, s.m, s.m};
                    const double flop = 2.0 * double(n) * double(s.m) * double(s.k);
                    auto         cell = [&](const std::function<void()>& fn) {
                        const Timing tm = best(budget, fn);
                        char         b[64];
                        std::snprintf(b, sizeof b, "%7.1f [%7.1f]", flop / tm.wall * 1e-9, flop / tm.cpu * 1e-9 / 1.0);
                        return std::string(b);
                    };
                    std::array<std::string, 6>& c = cells[ri];
                    if (pass == 0) {
                        c[4] = small && t == 1 ? cell([&] { small_gemm(xm, wk, nullptr, ym); }) : "      -";
                        c[5] = small && t == 1
                                   ? cell([&] { small_gemm(xm, cold[next_cold++ % cold.size()], nullptr, ym); })
                                   : "      -";
                        c[2] = pf ? cell([&] { gemm.matmul(xm, *pf, ConstMat{}, ym, pool); }) : "      -";
                        c[3] = pb ? cell([&] { gemm.matmul(xm, *pb, ConstMat{}, ym, pool); }) : "      -";
                    } else {
                        c[1] = cell([&] { matmul(xm, wmb, ConstMat{}, ym, pool); });
                        c[0] = cell([&] { sgemm_nt(xm, CMatF{wf.data(), s.m, s.k, s.k}, ym); });
                    }
                }
            }
            // OpenBLAS's idle threads poll for about 2^28 cycles (its THREAD_TIMEOUT) before they sleep.
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            for (size_t ri = 0; ri < rows.size(); ++ri) {
                const std::array<std::string, 6>& c = cells[ri];
                std::printf("  %-20s %5lld %4lld %3d %d | %s | %s | %s | %s | %s | %s\n", s.name, (long long)s.m,
                            (long long)s.k, rows[ri], t, c[0].c_str(), c[1].c_str(), c[2].c_str(), c[3].c_str(),
                            c[4].c_str(), c[5].c_str());
            }
            std::fflush(stdout);
        }
    }
    return 0;
}
