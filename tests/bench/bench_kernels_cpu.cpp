// CPU kernel benchmark (not a test): matmul GFLOP/s for F32 and BF16 weights (per panel size) next to raw
// cblas_sgemm on the same shapes, and exact/approximate attention GFLOP/s. One line per configuration.
//   bench_kernels_cpu [--threads N] [--reps R] [--quick] [--attention] [--small] [--shape SEQS,L,H,HKV,D]
//   (--attention: skip the matmul shapes; --small: only the hidden-256 and tiny-llada attention shapes; --shape: one
//   attention shape of your own, e.g. 1,330,4,4,32 for tiny-llada on the bench's default prompt)
// Measured choices recorded in the code (with the figures): kMatmulPanelRows (kernels/cpu/matmul.h), kAttnRowBlock
// (kernels/cpu/attention_tiles.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/common/dtype_convert.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_approx.h"
#include "kernels/cpu/attention_cols.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/thread_pool.h"

using namespace dyllm;
using namespace dyllm::cpu;

namespace {

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double cpu_s() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// The shared 2-core machine runs many jobs at once, so wall times overstate the cost: each run also records the
// process CPU time (all threads), and `cpu` reports the best CPU seconds. GFLOP/s per core = flop / cpu seconds.
double g_last_cpu = 0.0;

// Best (minimum) wall time of `reps` runs after one warm-up run; the best CPU time goes to g_last_cpu.
double best_time(int reps, const std::function<void()>& fn) {
    fn();
    double best = 1e30, best_cpu = 1e30;
    for (int r = 0; r < reps; ++r) {
        const double t0 = now_s(), c0 = cpu_s();
        fn();
        best     = std::min(best, now_s() - t0);
        best_cpu = std::min(best_cpu, cpu_s() - c0);
    }
    g_last_cpu = best_cpu;
    return best;
}

std::string per_core(double flop) {
    char b[64];
    std::snprintf(b, sizeof b, " | %6.1f GFLOP/s/core by CPU time", flop / g_last_cpu * 1e-9);
    return b;
}

// FNV-1a of a float buffer's bits: lets two builds of a kernel be compared for bit-identical output.
uint32_t fnv(const std::vector<float>& v) {
    uint32_t h = 2166136261u;
    for (float x : v) {
        uint32_t b;
        std::memcpy(&b, &x, 4);
        for (int i = 0; i < 4; ++i) h = (h ^ ((b >> (8 * i)) & 0xffu)) * 16777619u;
    }
    return h;
}

std::vector<float> randv(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937                          rng(seed);
    std::uniform_real_distribution<float> d(-scale, scale);
    std::vector<float>                    v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    int  threads = 2, reps = 3, queries = 0;
    bool quick = false, attention_only = false, small = false, cold = false;
    int  shape[5] = {0, 0, 0, 0, 0};  // --shape SEQS,L,H,HKV,D: one attention shape of your own (and no matmuls)
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--quick"))
            quick = true;
        else if (!std::strcmp(argv[i], "--attention"))
            attention_only = true;
        else if (!std::strcmp(argv[i], "--small"))
            small = true;
        else if (!std::strcmp(argv[i], "--cold"))
            cold = true;
        else if (!std::strcmp(argv[i], "--queries") && i + 1 < argc && (queries = std::atoi(argv[++i])) > 0)
            continue;  // (a count <= 0 falls through to the usage line, as a bad --shape does)
        else if (!std::strcmp(argv[i], "--shape") && i + 1 < argc &&
                 std::sscanf(argv[++i], "%d,%d,%d,%d,%d", &shape[0], &shape[1], &shape[2], &shape[3], &shape[4]) == 5 &&
                 shape[0] > 0 && shape[1] > 0 && shape[2] > 0 && shape[3] > 0 && shape[2] % shape[3] == 0 &&
                 shape[4] > 0)
            attention_only = true;
        else {
            std::fprintf(stderr,
                         "usage: %s [--threads N] [--reps R] [--quick] [--attention] [--small] [--shape SEQS,L,H,HKV,D]"
                         " [--queries NQ] [--cold]\n",
                         argv[0]);
            return 2;
        }
    }
    blas_set_threads(threads);
    ThreadPool pool(threads);
    std::printf("# %s, %d threads, best of %d\n", blas_config().c_str(), threads, reps);

    // ---- matmul: LLaDA-8B projection shapes (rows n = 768 = 512 prompt + 256 response; n = 32 a sparse step) ----
    struct MM {
        int64_t n, k, m;
    };
    std::vector<MM> mms = {
        {768, 4096, 4096}, {768, 4096, 12288}, {768, 12288, 4096}, {3072, 4096, 4096}, {32, 4096, 4096}};
    if (quick) mms = {{256, 1024, 1024}, {16, 1024, 1024}};
    if (attention_only) mms.clear();
    for (const MM& s : mms) {
        const auto            x  = randv(size_t(s.n * s.k), 1);
        const auto            wf = randv(size_t(s.m * s.k), 2, 0.05f);
        std::vector<uint16_t> wb(wf.size());
        for (size_t i = 0; i < wf.size(); ++i) wb[i] = f32_to_bf16(wf[i]);
        std::vector<float> y(size_t(s.n * s.m));
        const double       flop = 2.0 * double(s.n) * double(s.k) * double(s.m);
        const CMatF        xm{x.data(), s.n, s.k, s.k};
        const MatF         ym{y.data(), s.n, s.m, s.m};
        const double       t_raw = best_time(reps, [&] { sgemm_nt(xm, CMatF{wf.data(), s.m, s.k, s.k}, ym); });
        std::printf("matmul n=%-4lld k=%-5lld m=%-5lld raw cblas_sgemm f32        %8.2f ms %7.1f GFLOP/s%s\n",
                    (long long)s.n, (long long)s.k, (long long)s.m, t_raw * 1e3, flop / t_raw * 1e-9,
                    per_core(flop).c_str());
        const double t_f32 = best_time(reps, [&] {
            matmul(xm, ConstMat{wf.data(), ElemType::F32, s.m, s.k, s.k}, ConstMat{}, ym, pool);
        });
        std::printf(
            "matmul n=%-4lld k=%-5lld m=%-5lld cpu::matmul f32            %8.2f ms %7.1f GFLOP/s (%.0f%% of raw)%s\n",
            (long long)s.n, (long long)s.k, (long long)s.m, t_f32 * 1e3, flop / t_f32 * 1e-9, 100.0 * t_raw / t_f32,
            per_core(flop).c_str());
        for (int64_t panel : {128, 256, 512, 1024, 2048}) {
            const double t = best_time(reps, [&] {
                matmul(xm, ConstMat{wb.data(), ElemType::BF16, s.m, s.k, s.k}, ConstMat{}, ym, pool, panel);
            });
            std::printf(
                "matmul n=%-4lld k=%-5lld m=%-5lld cpu::matmul bf16 panel %-4lld %8.2f ms %7.1f GFLOP/s (%.0f%% of "
                "raw)%s\n",
                (long long)s.n, (long long)s.k, (long long)s.m, (long long)panel, t * 1e3, flop / t * 1e-9,
                100.0 * t_raw / t, per_core(flop).c_str());
        }
    }

    // ---- attention: one sequence of L rows, 32 heads x 128 (LLaDA), and a 4-sequence batch -------------------
    struct AT {
        int n_seq, L, H, Hkv, D;
    };
    // The first two: the hidden-256 LLaDA shape of the benchmarks (4 heads x 64, 256 prompt + 64 response rows) and
    // tiny-llada (4 heads x 32, a 4-shot prompt of ~512 rows); then LLaDA-8B's heads.
    std::vector<AT> ats = {
        {1, 320, 4, 4, 64}, {1, 544, 4, 4, 32}, {1, 768, 32, 32, 128}, {4, 768, 32, 32, 128}, {1, 768, 28, 4, 128}};
    if (quick) ats = {{1, 256, 8, 8, 64}, {2, 256, 8, 2, 64}};
    if (small) ats.resize(2);
    if (shape[0] > 0) ats = {{shape[0], shape[1], shape[2], shape[3], shape[4]}};
    for (const AT& a : ats) {
        const int64_t per_seq = queries > 0 ? std::min(queries, a.L) : a.L;  // query rows per sequence
        const int64_t nq = int64_t(a.n_seq) * per_seq, nk = int64_t(a.n_seq) * a.L;
        const int64_t qd = int64_t(a.H) * a.D, kvd = int64_t(a.Hkv) * a.D;
        const int64_t copies = cold ? std::max<int64_t>(1, (int64_t(96) << 20) / (2 * nk * kvd * 4)) : 1;
        const auto    q = randv(size_t(nq * qd), 3), k = randv(size_t(copies * nk * kvd), 4),
                   v              = randv(size_t(copies * nk * kvd), 5);
        int64_t              call = 0;  // the copy of K and V the next call reads
        std::vector<float>   out(size_t(nq * qd));
        std::vector<int32_t> q_seq(static_cast<size_t>(nq)), cu_k;
        for (int b = 0; b <= a.n_seq; ++b) cu_k.push_back(b * a.L);
        for (int64_t i = 0; i < nq; ++i) q_seq[size_t(i)] = int32_t(i / per_seq);
        const AttnDims d{a.H, a.Hkv, a.D};
        const double   flop = 4.0 * double(nq) * a.L * a.H * a.D;  // QK^T and PV, 2 flops per multiply-add
        for (int rb : {8, 16, 32, 64}) {
            const double t = best_time(reps, [&] {
                const int64_t off = (call++ % copies) * nk * kvd;
                attention(CMatF{q.data(), nq, qd, qd}, q_seq.data(), CMatF{k.data() + off, nk, kvd, kvd},
                          CMatF{v.data() + off, nk, kvd, kvd}, cu_k.data(), a.n_seq, d, MatF{out.data(), nq, qd, qd},
                          pool, rb);
            });
            std::printf(
                "attention seqs=%d L=%d queries=%lld H=%d Hkv=%d D=%d row_block=%-2d%s %8.2f ms %7.1f GFLOP/s%s"
                " | out %08x\n",
                a.n_seq, a.L, (long long)per_seq, a.H, a.Hkv, a.D, rb, cold ? " cold" : "", t * 1e3, flop / t * 1e-9,
                per_core(flop).c_str(), fnv(out));
        }
        // Approximate attention with 10% of the keys salient (DyLLM's typical salient fraction is a few percent).
        std::vector<int32_t> sal_k, cu_sal = {0};
        for (int b = 0; b < a.n_seq; ++b) {
            for (int j = 0; j < a.L; j += 10) sal_k.push_back(b * a.L + j);
            cu_sal.push_back(int32_t(sal_k.size()));
        }
        const int64_t ns = int64_t(sal_k.size());
        const auto    dv = randv(size_t(ns * kvd), 6), c_old = randv(size_t(nq * qd), 7);
        const double  flop_a = 2.0 * double(nq) * a.L * a.H * a.D + 2.0 * double(nq) * double(ns) / a.n_seq * a.H * a.D;
        const double  ta     = best_time(reps, [&] {
            const int64_t off = (call++ % copies) * nk * kvd;
            attention_approx(CMatF{q.data(), nq, qd, qd}, q_seq.data(), CMatF{k.data() + off, nk, kvd, kvd},
                                  CMatF{dv.data(), ns, kvd, kvd}, sal_k.data(), cu_sal.data(), cu_k.data(), a.n_seq,
                                  CMatF{c_old.data(), nq, qd, qd}, d, MatF{out.data(), nq, qd, qd}, pool);
        });
        std::printf("attention_approx seqs=%d L=%d H=%d Hkv=%d D=%d sal=10%% %8.2f ms %7.1f GFLOP/s%s | out %08x\n",
                    a.n_seq, a.L, a.H, a.Hkv, a.D, ta * 1e3, flop_a / ta * 1e-9, per_core(flop_a).c_str(), fnv(out));
        // The same with every 8th query row exact (P V over every key, as DyLLM serves its salient rows S_{l-1}).
        std::vector<int32_t> exact;
        for (int64_t i = 0; i < nq; i += 8) exact.push_back(int32_t(i));
        const double flop_e = flop_a + 2.0 * double(exact.size()) * a.L * a.H * a.D;
        const double te     = best_time(reps, [&] {
            const int64_t off = (call++ % copies) * nk * kvd;
            attention_approx(CMatF{q.data(), nq, qd, qd}, q_seq.data(), CMatF{k.data() + off, nk, kvd, kvd},
                                 CMatF{dv.data(), ns, kvd, kvd}, sal_k.data(), cu_sal.data(), cu_k.data(), a.n_seq,
                                 CMatF{c_old.data(), nq, qd, qd}, d, MatF{out.data(), nq, qd, qd}, pool, 0,
                                 CMatF{v.data() + off, nk, kvd, kvd}, exact.data(), int64_t(exact.size()));
        });
        std::printf(
            "attention_approx seqs=%d L=%d H=%d Hkv=%d D=%d sal=10%% exact=1/8 %8.2f ms %7.1f GFLOP/s%s | out "
            "%08x\n",
            a.n_seq, a.L, a.H, a.Hkv, a.D, te * 1e3, flop_e / te * 1e-9, per_core(flop_e).c_str(), fnv(out));
        // The column-sparse update (--approx-columns) and its incremental form (--approx-incremental, the studio's
        // default): only the salient keys are scored, against each row's log-sum-exp from an exact attention. With
        // 10% of the keys salient, and with the 1 and 3 keys per sequence of a typical decode step (the tokens
        // decoded last).
        std::vector<float> lse(size_t(nq * a.H)), c_ref(size_t(nq * qd));
        attention(CMatF{q.data(), nq, qd, qd}, q_seq.data(), CMatF{k.data(), nk, kvd, kvd},
                  CMatF{v.data(), nk, kvd, kvd}, cu_k.data(), a.n_seq, d, MatF{c_ref.data(), nq, qd, qd}, pool, 0,
                  MatF{lse.data(), nq, a.H, a.H});
        std::vector<float> lse_out(lse.size());
        for (const int n_keys : {0, 1, 3}) {  // 0: every 10th key
            std::vector<int32_t> sal_c, cu_sal_c = {0};
            for (int b = 0; b < a.n_seq; ++b) {
                if (n_keys == 0)
                    for (int j = 0; j < a.L; j += 10) sal_c.push_back(b * a.L + j);
                else
                    for (int t = n_keys; t >= 1; --t) sal_c.push_back(b * a.L + a.L - 7 * t);
                cu_sal_c.push_back(int32_t(sal_c.size()));
            }
            const int64_t      ns_c = int64_t(sal_c.size());
            const auto         dv_c = randv(size_t(ns_c * kvd), 6), noise = randv(size_t(ns_c * kvd), 8, 0.1f);
            std::vector<float> k_old(size_t(ns_c * kvd)), v_old(size_t(ns_c * kvd));
            for (int64_t t = 0; t < ns_c; ++t)
                for (int64_t c = 0; c < kvd; ++c) {
                    k_old[size_t(t * kvd + c)] = k[size_t(sal_c[size_t(t)] * kvd + c)] + noise[size_t(t * kvd + c)];
                    v_old[size_t(t * kvd + c)] = v[size_t(sal_c[size_t(t)] * kvd + c)] - dv_c[size_t(t * kvd + c)];
                }
            const std::string sal_name = n_keys == 0 ? "10%" : std::to_string(n_keys) + (n_keys == 1 ? "key" : "keys");
            for (const bool inc : {false, true}) {
                const double flop_c = (inc ? 8.0 : 4.0) * double(nq) * double(ns_c) / a.n_seq * a.H * a.D;
                const double tc     = best_time(reps, [&] {
                    attention_cols(CMatF{q.data(), nq, qd, qd}, q_seq.data(), CMatF{k.data(), nk, kvd, kvd},
                                       CMatF{dv_c.data(), ns_c, kvd, kvd}, sal_c.data(), cu_sal_c.data(),
                                       CMatF{lse.data(), nq, a.H, a.H}, CMatF{c_ref.data(), nq, qd, qd}, d,
                                       MatF{out.data(), nq, qd, qd}, pool,
                                   inc ? CMatF{k_old.data(), ns_c, kvd, kvd} : CMatF{},
                                   inc ? CMatF{v_old.data(), ns_c, kvd, kvd} : CMatF{},
                                   inc ? MatF{lse_out.data(), nq, a.H, a.H} : MatF{});
                });
                    std::printf(
                    "attention_cols%s seqs=%d L=%d queries=%lld H=%d Hkv=%d D=%d sal=%s %8.3f ms %7.1f "
                    "GFLOP/s%s | out %08x\n",
                    inc ? " incremental" : "", a.n_seq, a.L, (long long)per_seq, a.H, a.Hkv, a.D, sal_name.c_str(),
                    tc * 1e3, flop_c / tc * 1e-9, per_core(flop_c).c_str(), fnv(out));
            }
        }
        // The same Q K^T FLOPs through sgemm, one head at a time (an upper bound for the score pass).
        std::vector<float> s(size_t(per_seq) * a.L);
        const double       ts = best_time(reps, [&] {
            for (int b = 0; b < a.n_seq; ++b)
                for (int h = 0; h < a.H; ++h)
                    sgemm_nt(CMatF{q.data() + int64_t(b) * per_seq * qd + int64_t(h) * a.D, per_seq, a.D, qd},
                                   CMatF{k.data() + int64_t(b) * a.L * kvd + int64_t(h / (a.H / a.Hkv)) * a.D, a.L, a.D, kvd},
                                   MatF{s.data(), per_seq, a.L, a.L});
        });
        std::printf("sgemm QK^T per head (reference) seqs=%d L=%d H=%d D=%d   %8.2f ms %7.1f GFLOP/s%s\n", a.n_seq, a.L,
                          a.H, a.D, ts * 1e3, flop / 2 / ts * 1e-9, per_core(flop / 2).c_str());
    }
    return 0;
}
