// One dense forward step of a LLaDA-8B-shaped model (d 4096, 32 heads x 128, FFN 12288, vocab 126464) with few layers
// and random bf16 weights generated in memory, composed from CpuBackend ops exactly as a dense step runs; reports the
// achieved GFLOP/s next to the best raw cblas_sgemm GFLOP/s measured on the same shapes in the same run.
//   bench_dense_step [--layers 2] [--vocab 126464] [--prompt 512] [--gen 256] [--batch 1,4] [--threads 0]
//                    [--dim 4096] [--heads 32] [--ffn 12288]
// Not a test: prints one line per configuration (plus a per-op breakdown). On a loaded machine read the CPU-time
// column (GFLOP/s per core over the process's CPU seconds): wall times are inflated there.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "engine/backend.h"
#include "engine/backend_cpu.h"
#include "kernels/common/dtype_convert.h"
#include "kernels/cpu/blas.h"

using namespace dyllm;

namespace {

double wall_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double cpu_s() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Random bf16 weights in [-scale, scale) (xorshift per thread: 1.5 G values must be generated in seconds).
void fill_bf16(uint16_t* dst, size_t n, uint64_t seed, float scale, int threads) {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
        ts.emplace_back([=] {
            uint64_t     s  = seed * 0x9E3779B97F4A7C15ull + uint64_t(t) + 1;
            const size_t lo = n * size_t(t) / size_t(threads), hi = n * size_t(t + 1) / size_t(threads);
            for (size_t i = lo; i < hi; ++i) {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                const float u = float(uint32_t(s >> 40)) * (1.0f / 16777216.0f);  // [0, 1)
                dst[i]        = f32_to_bf16((2.0f * u - 1.0f) * scale);
            }
        });
    }
    for (auto& th : ts) th.join();
}

struct Weight {
    std::vector<uint16_t> data;
    TensorView            view;
};
Weight make_weight(int64_t rows, int64_t cols, uint64_t seed, float scale, int threads) {
    Weight w;
    w.data.resize(size_t(rows * cols));
    fill_bf16(w.data.data(), w.data.size(), seed, scale, threads);
    w.view = TensorView::matrix(w.data.data(), DType::BF16, Device::Cpu, rows, cols);
    return w;
}

struct Layer {
    Weight attn_norm, wq, wk, wv, wo, ffn_norm, wg, wu, wd;
};

std::vector<int> parse_list(const char* s) {
    std::vector<int> v;
    for (const char* p = s; *p;) {
        v.push_back(std::atoi(p));
        while (*p && *p != ',') ++p;
        if (*p == ',') ++p;
    }
    return v;
}

// Accumulates wall and CPU seconds per op class.
struct Timer {
    std::map<std::string, double> wall, cpu;
    template <class F>
    void run(const char* name, F&& f) {
        const double w0 = wall_s(), c0 = cpu_s();
        f();
        wall[name] += wall_s() - w0;
        cpu[name] += cpu_s() - c0;
    }
};

}  // namespace

int main(int argc, char** argv) {
    int64_t          n_layer = 2, n_vocab = 126464, prompt = 512, gen = 256, d = 4096, n_head = 32, n_ff = 12288;
    int              threads = 0;
    std::vector<int> batches = {1, 4};
    for (int i = 1; i < argc; ++i) {
        auto next = [&](const char* flag) -> const char* {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", flag);
                std::exit(2);
            }
            return argv[++i];
        };
        if (!std::strcmp(argv[i], "--layers"))
            n_layer = std::atoll(next("--layers"));
        else if (!std::strcmp(argv[i], "--vocab"))
            n_vocab = std::atoll(next("--vocab"));
        else if (!std::strcmp(argv[i], "--prompt"))
            prompt = std::atoll(next("--prompt"));
        else if (!std::strcmp(argv[i], "--gen"))
            gen = std::atoll(next("--gen"));
        else if (!std::strcmp(argv[i], "--batch"))
            batches = parse_list(next("--batch"));
        else if (!std::strcmp(argv[i], "--threads"))
            threads = std::atoi(next("--threads"));
        else if (!std::strcmp(argv[i], "--dim"))
            d = std::atoll(next("--dim"));
        else if (!std::strcmp(argv[i], "--heads"))
            n_head = std::atoll(next("--heads"));
        else if (!std::strcmp(argv[i], "--ffn"))
            n_ff = std::atoll(next("--ffn"));
        else {
            std::fprintf(stderr,
                         "usage: %s [--layers N] [--vocab V] [--prompt P] [--gen G] [--batch 1,4] [--threads T] "
                         "[--dim D] [--heads H] [--ffn F]\n",
                         argv[0]);
            return 2;
        }
    }
    if (n_layer < 1 || n_vocab < 1 || prompt + gen < 1 || d < 2 || n_head < 1 || d % n_head || (d / n_head) % 2 ||
        n_ff < 1 || batches.empty()) {
        std::fprintf(stderr, "bench_dense_step: invalid sizes\n");
        return 2;
    }
    auto          be    = make_backend(BackendKind::Cpu, threads);
    const int     n_thr = threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()));
    const int     hd    = int(d / n_head);
    const int64_t L     = prompt + gen;
    std::printf(
        "# %s; model: %lld layers, d %lld, %lld heads x %d, ffn %lld, vocab %lld, bf16 weights; rows/seq %lld "
        "(%lld prompt + %lld gen)\n",
        be->description().c_str(), (long long)n_layer, (long long)d, (long long)n_head, hd, (long long)n_ff,
        (long long)n_vocab, (long long)L, (long long)prompt, (long long)gen);

    // ---- weights (the embedding table doubles as the untied LM head: same shape, values irrelevant to timing) ----
    const double t_gen0 = wall_s();
    // Scales keep activations O(1) through the random layers: ~1/sqrt(fan_in).
    Weight             table = make_weight(n_vocab, d, 1, 1.0f, n_thr);
    std::vector<Layer> layers(static_cast<size_t>(n_layer));
    std::vector<float> ones(size_t(std::max(d, n_ff)), 1.0f);
    const float        sd = 1.0f / std::sqrt(float(d)), sf = 1.0f / std::sqrt(float(n_ff));
    for (int64_t l = 0; l < n_layer; ++l) {
        Layer&         ly = layers[size_t(l)];
        const uint64_t s  = 100 + uint64_t(l) * 16;
        ly.wq             = make_weight(d, d, s + 1, sd, n_thr);
        ly.wk             = make_weight(d, d, s + 2, sd, n_thr);
        ly.wv             = make_weight(d, d, s + 3, sd, n_thr);
        ly.wo             = make_weight(d, d, s + 4, sd, n_thr);
        ly.wg             = make_weight(n_ff, d, s + 5, sd, n_thr);
        ly.wu             = make_weight(n_ff, d, s + 6, sd, n_thr);
        ly.wd             = make_weight(d, n_ff, s + 7, sf, n_thr);
        ly.attn_norm.view = TensorView::vector(ones.data(), DType::F32, Device::Cpu, d);
        ly.ffn_norm.view  = TensorView::vector(ones.data(), DType::F32, Device::Cpu, d);
    }
    const TensorView final_norm = TensorView::vector(ones.data(), DType::F32, Device::Cpu, d);
    std::printf("# weights generated in %.1f s (%.2f GB bf16)\n", wall_s() - t_gen0,
                double(n_vocab * d + n_layer * (4 * d * d + 3 * d * n_ff)) * 2e-9);

    for (int B : batches) {
        const int64_t N = int64_t(B) * L;
        // ---- the best raw sgemm on this step's matmul shapes (f32 weights; the LM head shape capped at 16384 rows
        // of W, which keeps the f32 copy small and gives the same per-flop speed) ----
        double best_sgemm = 0.0, best_sgemm_cpu = 0.0;
        {
            const int64_t      shapes[4][2] = {{d, d}, {n_ff, d}, {d, n_ff}, {std::min<int64_t>(n_vocab, 16384), d}};
            std::vector<float> xs(size_t(N * std::max(d, n_ff)), 0.5f);
            for (auto& sh : shapes) {
                const int64_t      m = sh[0], k = sh[1];
                std::vector<float> w(size_t(m * k), 0.01f), y(size_t(N * m));
                const cpu::CMatF   xm{xs.data(), N, k, k};
                const cpu::MatF    ym{y.data(), N, m, m};
                cpu::sgemm_nt(xm, cpu::CMatF{w.data(), m, k, k}, ym);  // warm-up
                const double w0 = wall_s(), c0 = cpu_s();
                cpu::sgemm_nt(xm, cpu::CMatF{w.data(), m, k, k}, ym);
                const double tw = wall_s() - w0, tc = cpu_s() - c0, flop = 2.0 * double(N) * double(m) * double(k);
                std::printf(
                    "# raw cblas_sgemm f32 [%lld x %lld] x [%lld x %lld]^T: %.1f GFLOP/s wall, %.1f GFLOP/s/core "
                    "by CPU time\n",
                    (long long)N, (long long)k, (long long)m, (long long)k, flop / tw * 1e-9, flop / tc * 1e-9);
                best_sgemm     = std::max(best_sgemm, flop / tw);
                best_sgemm_cpu = std::max(best_sgemm_cpu, flop / tc);
            }
        }

        // ---- activations ----
        Tensor h = be->alloc(DType::F32, N, d), res = be->alloc(DType::F32, N, d), x = be->alloc(DType::F32, N, d);
        Tensor q = be->alloc(DType::F32, N, d), k = be->alloc(DType::F32, N, d), v = be->alloc(DType::F32, N, d);
        Tensor o = be->alloc(DType::F32, N, d), a = be->alloc(DType::F32, N, d);
        Tensor gate = be->alloc(DType::F32, N, n_ff), up = be->alloc(DType::F32, N, n_ff);
        Tensor logits = be->alloc(DType::F32, N, n_vocab);
        std::vector<int32_t> ids(static_cast<size_t>(N)), pos(ids.size()), q_seq(ids.size()), cu_k;
        for (int64_t i = 0; i < N; ++i) {
            ids[size_t(i)]   = int32_t((i * 7919) % n_vocab);
            pos[size_t(i)]   = int32_t(i % L);
            q_seq[size_t(i)] = int32_t(i / L);
        }
        for (int b = 0; b <= B; ++b) cu_k.push_back(int32_t(b * L));
        const AttentionShape shape{int(n_head), int(n_head), hd};  // LLaDA: MHA
        const TensorView     none{};

        // ---- one dense step (engine/README.md §a.6), timed per op class ----
        Timer        tm;
        const double w0 = wall_s(), c0 = cpu_s();
        tm.run("embed", [&] { be->embed(table.view, ids, h); });
        for (int64_t l = 0; l < n_layer; ++l) {
            const Layer& ly = layers[size_t(l)];
            if (l == 0)
                tm.run("add", [&] { be->copy(h, res); });
            else
                tm.run("add", [&] { be->add(res, h, res); });
            tm.run("norm", [&] { be->rms_norm(res, ly.attn_norm.view, 1e-5f, x); });
            tm.run("qkv", [&] {
                be->matmul(x, ly.wq.view, none, q);
                be->matmul(x, ly.wk.view, none, k);
                be->matmul(x, ly.wv.view, none, v);
            });
            tm.run("rope", [&] {
                be->rope(q, pos, int(n_head), hd, 500000.0f);
                be->rope(k, pos, int(n_head), hd, 500000.0f);
            });
            tm.run("attention", [&] { be->attention(q, q_seq, k, v, cu_k, shape, o); });
            tm.run("o_proj", [&] { be->matmul(o, ly.wo.view, none, a); });
            tm.run("add", [&] { be->add(res, a, res); });
            tm.run("norm", [&] { be->rms_norm(res, ly.ffn_norm.view, 1e-5f, x); });
            tm.run("ffn", [&] {
                be->matmul(x, ly.wg.view, none, gate);
                be->matmul(x, ly.wu.view, none, up);
            });
            tm.run("silu_mul", [&] { be->silu_mul(gate, up, gate); });
            tm.run("ffn", [&] { be->matmul(gate, ly.wd.view, none, h); });
        }
        tm.run("add", [&] { be->add(res, h, res); });
        tm.run("norm", [&] { be->rms_norm(res, final_norm, 1e-5f, x); });
        tm.run("lm_head", [&] { be->matmul(x, table.view, none, logits); });
        const double tw = wall_s() - w0, tc = cpu_s() - c0;

        // FLOPs: 2 per multiply-add of every matmul, 4 L^2 d per sequence for attention (QK^T and PV); elementwise
        // ops (norms, rope, silu, adds: < 0.1% of the total) are not counted.
        const double mm_flop   = 2.0 * double(N) * double(n_layer) * double(4 * d * d + 3 * d * n_ff);
        const double attn_flop = 4.0 * double(B) * double(L) * double(L) * double(d) * double(n_layer);
        const double head_flop = 2.0 * double(N) * double(d) * double(n_vocab);
        const double flop      = mm_flop + attn_flop + head_flop;
        std::printf(
            "dense_step batch=%d rows=%lld layers=%lld vocab=%lld: %.2f s wall, %.1f GFLOP/s (%.0f%% of best "
            "sgemm %.1f) | by CPU time %.1f GFLOP/s/core (%.0f%% of sgemm %.1f) | %.1f TFLOP\n",
            B, (long long)N, (long long)n_layer, (long long)n_vocab, tw, flop / tw * 1e-9,
            100.0 * (flop / tw) / best_sgemm, best_sgemm * 1e-9, flop / tc * 1e-9, 100.0 * (flop / tc) / best_sgemm_cpu,
            best_sgemm_cpu * 1e-9, flop * 1e-12);
        std::printf("#   per op (wall s / CPU s):");
        for (const auto& [name, t] : tm.wall) std::printf(" %s %.2f/%.2f", name.c_str(), t, tm.cpu[name]);
        std::printf("\n");
        // Keep the result observable (and check it is finite: random layers must not blow up).
        double cs = 0.0;
        for (int64_t c = 0; c < std::min<int64_t>(n_vocab, 1000); ++c) cs += logits.ptr<float>()[c];
        std::printf("#   logits[0, :1000] sum %.4g\n", cs);
    }
    return 0;
}
