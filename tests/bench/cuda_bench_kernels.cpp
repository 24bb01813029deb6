// CUDA kernel benchmark on LLaDA-8B and Dream-7B shapes: each kernel timed with cudaEvents (median of repeats, L2
// flushed before each repeat as llm.c's benchmark_kernel does), against a plain cuBLAS bf16 GEMM and the dense
// attention baseline; prints achieved TFLOP/s and GB/s next to the device peaks. Without a device it says so and
// exits 0 (it asserts nothing: benchmarks are not tests).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "kernels/common/attention_approx_math.h"
#include "kernels/common/scalar_math.h"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/attention_approx.cuh"
#include "kernels/cuda/cosine_rows.cuh"
#include "kernels/cuda/cublas_gemm.cuh"
#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/rows.cuh"
#include "kernels/cuda/score_logits.cuh"

using namespace dyllm;
using cuda::ElemType;
using cuda::Mat;

namespace {

struct ModelShape {
    const char* name;
    int         n_embd, n_head, n_kv_head, head_dim, n_ff, n_vocab;
};
// From the models' config.json (engine/README.md §c): LLaDA-8B-Instruct and Dream-v0-Instruct-7B.
constexpr ModelShape kModels[] = {
    {"LLaDA-8B", 4096, 32, 32, 128, 12288, 126464},
    {"Dream-7B", 3584, 28, 4, 128, 18944, 152064},
};

struct Peaks {
    double bf16_tflops = 0, fp32_tflops = 0, gbps = 0;
};

// Dense bf16 tensor-core and fp32 FLOP per clock per SM: 2048 / 128 on sm_80 (A100 whitepaper: 312 TFLOPS bf16,
// 19.5 TFLOPS fp32 at 108 SMs x 1.41 GHz), 4096 / 256 on sm_90 (H100 whitepaper: 989 TFLOPS bf16, 67 TFLOPS fp32 for
// SXM5 at 132 SMs x 1.83 GHz). Other architectures: reported as unknown (0).
Peaks device_peaks(int dev) {
    int major = 0, sms = 0, clk_khz = 0, mem_khz = 0, bus_bits = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&clk_khz, cudaDevAttrClockRate, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev));
    Peaks        p;
    const double clk = double(clk_khz) * 1e3;
    if (major == 8) {
        p.bf16_tflops = 2048.0 * sms * clk / 1e12;
        p.fp32_tflops = 128.0 * sms * clk / 1e12;
    } else if (major == 9) {
        p.bf16_tflops = 4096.0 * sms * clk / 1e12;
        p.fp32_tflops = 256.0 * sms * clk / 1e12;
    }
    p.gbps = 2.0 * double(mem_khz) * 1e3 * double(bus_bits) / 8.0 / 1e9;  // double data rate
    return p;
}

struct DeviceBuf {
    void* p = nullptr;
    explicit DeviceBuf(size_t bytes) {
        CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(bytes, 256)));
        CUDA_CHECK(cudaMemset(p, 0, std::max<size_t>(bytes, 256)));
    }
    ~DeviceBuf() { (void)cudaFree(p); }
    DeviceBuf(const DeviceBuf&)            = delete;
    DeviceBuf& operator=(const DeviceBuf&) = delete;
};

// Fills a device fp32/bf16 buffer with small pseudo-random values (so softmax and norms see realistic magnitudes).
void fill_random(void* d, size_t n, ElemType t, uint32_t seed, float scale = 1.0f) {
    std::vector<float> h(n);
    uint32_t           x = seed * 747796405u + 2891336453u;
    for (float& v : h) {
        x = x * 1664525u + 1013904223u;
        v = (float((x >> 8) & 0xffff) / 65535.0f - 0.5f) * 2.0f * scale;
    }
    DeviceBuf tmp(n * 4);
    CUDA_CHECK(cudaMemcpy(tmp.p, h.data(), n * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cuda::copy(Mat{tmp.p, ElemType::F32, 1, int64_t(n), int64_t(n)}, Mat{d, t, 1, int64_t(n), int64_t(n)},
                          nullptr));
    CUDA_CHECK(cudaDeviceSynchronize());
}

class Timer {
public:
    explicit Timer(cudaStream_t s) : stream_(s), flush_(size_t(l2_bytes()) * 2) {
        CUDA_CHECK(cudaEventCreate(&a_));
        CUDA_CHECK(cudaEventCreate(&b_));
    }
    ~Timer() {
        (void)cudaEventDestroy(a_);
        (void)cudaEventDestroy(b_);
    }
    // Median milliseconds of `reps` runs of f after 3 warm-ups; L2 is flushed (a memset of twice its size) before each
    // timed run, outside the timed region.
    double median_ms(const std::function<void()>& f, int reps = 20) {
        for (int i = 0; i < 3; ++i) f();
        std::vector<float> ms;
        for (int i = 0; i < reps; ++i) {
            CUDA_CHECK(cudaMemsetAsync(flush_.p, i & 0xff, size_t(l2_bytes()) * 2, stream_));
            CUDA_CHECK(cudaEventRecord(a_, stream_));
            f();
            CUDA_CHECK(cudaEventRecord(b_, stream_));
            CUDA_CHECK(cudaEventSynchronize(b_));
            float t = 0;
            CUDA_CHECK(cudaEventElapsedTime(&t, a_, b_));
            ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        return ms[ms.size() / 2];
    }

private:
    static int l2_bytes() {
        int dev = 0, l2 = 0;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
        return std::max(l2, 1 << 20);
    }
    cudaStream_t stream_;
    DeviceBuf    flush_;
    cudaEvent_t  a_ = nullptr, b_ = nullptr;
};

void report(const char* model, const std::string& kernel, double ms, double flop, double bytes, const Peaks& pk,
            bool tensor_cores) {
    const double tflops = flop / (ms * 1e-3) / 1e12, gbps = bytes / (ms * 1e-3) / 1e9;
    const double peak_tf = tensor_cores ? pk.bf16_tflops : pk.fp32_tflops;
    std::printf("%-9s %-44s %9.4f ms %8.2f TFLOP/s (%5.1f%% of %s peak) %8.1f GB/s (%5.1f%% of peak)\n", model,
                kernel.c_str(), ms, tflops, peak_tf > 0 ? 100.0 * tflops / peak_tf : 0.0,
                tensor_cores ? "bf16" : "fp32", gbps, pk.gbps > 0 ? 100.0 * gbps / pk.gbps : 0.0);
}

void bench_model(const ModelShape& m, const Peaks& pk, cudaStream_t s, cublasHandle_t h) {
    Timer timer(s);
    // Prompt 256 + response 256 (the paper's generation length, engine/README.md §a.11), one sequence.
    const int     P = 256, R = 256, L = P + R;
    const int64_t qd = int64_t(m.n_head) * m.head_dim, kvd = int64_t(m.n_kv_head) * m.head_dim;

    // ---- GEMMs: the backend's matmul (fp32 activation -> bf16 + cublasGemmEx) vs a plain bf16 cublasGemmEx ----
    struct G {
        const char* what;
        int64_t     n, k, out;
    };
    const G gemms[] = {{"q_proj", L, m.n_embd, qd},
                       {"ffn_up", L, m.n_embd, m.n_ff},
                       {"ffn_down", L, m.n_ff, m.n_embd},
                       {"lm_head (response rows)", R, m.n_embd, m.n_vocab},
                       {"ffn_up, 16 salient rows", 16, m.n_embd, m.n_ff}};
    for (const G& g : gemms) {
        DeviceBuf x(size_t(g.n * g.k) * 4), w(size_t(g.out * g.k) * 2), y(size_t(g.n * g.out) * 4),
            xb(size_t(g.n * g.k) * 2);
        fill_random(x.p, size_t(g.n * g.k), ElemType::F32, 1);
        fill_random(w.p, size_t(g.out * g.k), ElemType::BF16, 2, 0.02f);
        const Mat xm{x.p, ElemType::F32, g.n, g.k, g.k}, wm{w.p, ElemType::BF16, g.out, g.k, g.k},
            ym{y.p, ElemType::F32, g.n, g.out, g.out};
        const double flop  = 2.0 * double(g.n) * double(g.k) * double(g.out);
        const double bytes = double(g.out * g.k) * 2 + double(g.n * g.k) * 4 + double(g.n * g.out) * 4;
        const double ms    = timer.median_ms([&] { CUBLAS_CHECK(cuda::matmul(h, xm, wm, Mat{}, ym, xb.p, s)); });
        report(m.name, std::string("matmul ") + g.what, ms, flop, bytes, pk, true);
        const float  one = 1.0f, zero = 0.0f;
        const double ms_ref = timer.median_ms([&] {
            CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, int(g.out), int(g.n), int(g.k), &one, w.p,
                                      CUDA_R_16BF, int(g.k), xb.p, CUDA_R_16BF, int(g.k), &zero, y.p, CUDA_R_32F,
                                      int(g.out), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        });
        report(m.name, std::string("  cuBLAS bf16 baseline ") + g.what, ms_ref, flop, bytes, pk, true);
    }

    // ---- memory-bound row ops ----
    {
        DeviceBuf x(size_t(L) * m.n_embd * 4), y(size_t(L) * m.n_embd * 4), w(size_t(m.n_embd) * 2);
        fill_random(x.p, size_t(L) * m.n_embd, ElemType::F32, 3);
        fill_random(w.p, size_t(m.n_embd), ElemType::BF16, 4);
        const Mat    xm{x.p, ElemType::F32, L, m.n_embd, m.n_embd}, ym{y.p, ElemType::F32, L, m.n_embd, m.n_embd};
        const double bytes = double(L) * m.n_embd * 8;
        report(m.name, "rms_norm [512, d]", timer.median_ms([&] {
            CUDA_CHECK(cuda::rms_norm(xm, Mat{w.p, ElemType::BF16, 1, m.n_embd, m.n_embd}, 1e-5f, ym, s));
        }),
               3.0 * L * m.n_embd, bytes, pk, false);
        report(m.name, "add [512, d]", timer.median_ms([&] { CUDA_CHECK(cuda::add(xm, ym, ym, s)); }),
               double(L) * m.n_embd, double(L) * m.n_embd * 12, pk, false);
        DeviceBuf cosv(size_t(L) * 4);
        report(m.name, "cosine_rows [512, d]",
               timer.median_ms([&] { CUDA_CHECK(cuda::cosine_rows(xm, ym, static_cast<float*>(cosv.p), nullptr, s)); }),
               6.0 * L * m.n_embd, bytes, pk, false);
        std::vector<int32_t> idx(64);
        for (int i = 0; i < 64; ++i) idx[size_t(i)] = (i * 7) % L;
        DeviceBuf di(idx.size() * 4), cache(size_t(L) * m.n_embd * 2);
        CUDA_CHECK(cudaMemcpy(di.p, idx.data(), idx.size() * 4, cudaMemcpyHostToDevice));
        report(m.name, "scatter_rows 64 rows -> bf16 cache", timer.median_ms([&] {
            CUDA_CHECK(cuda::scatter_rows(Mat{x.p, ElemType::F32, 64, m.n_embd, m.n_embd},
                                          static_cast<const int32_t*>(di.p),
                                          Mat{cache.p, ElemType::BF16, L, m.n_embd, m.n_embd}, s));
        }),
               0, 64.0 * m.n_embd * 6, pk, false);
    }
    {
        DeviceBuf g(size_t(L) * m.n_ff * 4), u(size_t(L) * m.n_ff * 4);
        fill_random(g.p, size_t(L) * m.n_ff, ElemType::F32, 5);
        fill_random(u.p, size_t(L) * m.n_ff, ElemType::F32, 6);
        const Mat gm{g.p, ElemType::F32, L, m.n_ff, m.n_ff}, um{u.p, ElemType::F32, L, m.n_ff, m.n_ff};
        report(m.name, "silu_mul [512, ff]", timer.median_ms([&] { CUDA_CHECK(cuda::silu_mul(gm, um, gm, s)); }),
               4.0 * L * m.n_ff, double(L) * m.n_ff * 12, pk, false);
    }
    {
        DeviceBuf            q(size_t(L) * qd * 4), pos(size_t(L) * 4), inv(size_t(m.head_dim / 2) * 4);
        std::vector<int32_t> hp(L);
        for (int i = 0; i < L; ++i) hp[size_t(i)] = i;
        std::vector<float> hinv(size_t(m.head_dim / 2));
        for (int i = 0; i < m.head_dim / 2; ++i) hinv[size_t(i)] = rope_inv_freq(i, m.head_dim, 500000.0f);
        CUDA_CHECK(cudaMemcpy(pos.p, hp.data(), hp.size() * 4, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(inv.p, hinv.data(), hinv.size() * 4, cudaMemcpyHostToDevice));
        report(m.name, "rope q [512, H*D]", timer.median_ms([&] {
            CUDA_CHECK(cuda::rope(Mat{q.p, ElemType::F32, L, qd, qd}, static_cast<const int32_t*>(pos.p), m.n_head,
                                  m.head_dim, static_cast<const float*>(inv.p), s));
        }),
               6.0 * L * qd / 2, double(L) * qd * 8, pk, false);
    }
    {
        DeviceBuf logits(size_t(R) * m.n_vocab * 4), tok(size_t(R) * 4), sc(size_t(R) * 4);
        fill_random(logits.p, size_t(R) * m.n_vocab, ElemType::F32, 7, 8.0f);
        const Mat lm{logits.p, ElemType::F32, R, m.n_vocab, m.n_vocab};
        report(m.name, "score_logits neg-entropy [256, vocab]", timer.median_ms([&] {
            CUDA_CHECK(cuda::score_logits(lm, cuda::ScoreRule::NegEntropy, nullptr, 0, static_cast<int32_t*>(tok.p),
                                          static_cast<float*>(sc.p), s));
        }),
               4.0 * R * m.n_vocab, double(R) * m.n_vocab * 12, pk, false);
    }

    // ---- attention: dense baseline (all L query rows), exact salient rows, approximate (column-sparse) ----
    {
        DeviceBuf q(size_t(L) * qd * 4), k(size_t(L) * kvd * 2), v(size_t(L) * kvd * 2), o(size_t(L) * qd * 4),
            c_old(size_t(L) * qd * 2);
        fill_random(q.p, size_t(L) * qd, ElemType::F32, 8);
        fill_random(k.p, size_t(L) * kvd, ElemType::BF16, 9);
        fill_random(v.p, size_t(L) * kvd, ElemType::BF16, 10);
        fill_random(c_old.p, size_t(L) * qd, ElemType::BF16, 11);
        const cuda::AttnDims       dims{m.n_head, m.n_kv_head, m.head_dim};
        const std::vector<int32_t> cu_k = {0, L};
        DeviceBuf                  dcu(8);
        CUDA_CHECK(cudaMemcpy(dcu.p, cu_k.data(), 8, cudaMemcpyHostToDevice));
        for (const int nq : {L, R, 16}) {  // FULL step, response-only step, 16 salient rows
            const std::vector<int32_t> q_seq(size_t(nq), 0);
            const auto                 tiles = plan_query_tiles(q_seq.data(), nq, 1, cuda::attention_tile_rows(dims));
            DeviceBuf                  dt(tiles.size() * sizeof(QueryTile));
            CUDA_CHECK(cudaMemcpy(dt.p, tiles.data(), tiles.size() * sizeof(QueryTile), cudaMemcpyHostToDevice));
            const double flop  = 4.0 * nq * L * double(qd);
            const double bytes = double(nq) * qd * 8 + double(L) * kvd * 4;
            const double ms    = timer.median_ms([&] {
                CUDA_CHECK(cuda::attention(Mat{q.p, ElemType::F32, nq, qd, qd}, Mat{k.p, ElemType::BF16, L, kvd, kvd},
                                              Mat{v.p, ElemType::BF16, L, kvd, kvd}, static_cast<const int32_t*>(dcu.p),
                                              static_cast<const QueryTile*>(dt.p), int(tiles.size()), dims,
                                              Mat{o.p, ElemType::F32, nq, qd, qd}, Mat{}, s));
            });
            report(m.name, "attention exact (dense baseline) nq=" + std::to_string(nq) + " nk=512", ms, flop, bytes, pk,
                   false);
            if (nq == 16) continue;
            // Approximate attention for the same query rows with 16 salient keys spread over the sequence.
            std::vector<int32_t> sal;
            for (int j = 0; j < 16; ++j) sal.push_back(P + j * (R / 16));
            const std::vector<int32_t> cu_sal = {0, int32_t(sal.size())};
            const KeyTileMasks         km     = build_key_tile_masks(sal.data(), cu_sal.data(), cu_k.data(), 1);
            DeviceBuf dmask(km.mask.size() * 8), dbase(km.base.size() * 4), doff(km.tile_off.size() * 4),
                dv(sal.size() * size_t(kvd) * 2);
            fill_random(dv.p, sal.size() * size_t(kvd), ElemType::BF16, 12, 0.05f);
            CUDA_CHECK(cudaMemcpy(dmask.p, km.mask.data(), km.mask.size() * 8, cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(dbase.p, km.base.data(), km.base.size() * 4, cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(doff.p, km.tile_off.data(), km.tile_off.size() * 4, cudaMemcpyHostToDevice));
            const double aflop = 2.0 * nq * L * double(qd) + 2.0 * nq * double(sal.size()) * double(qd);
            const double ams   = timer.median_ms([&] {
                CUDA_CHECK(cuda::attention_approx(
                      Mat{q.p, ElemType::F32, nq, qd, qd}, Mat{k.p, ElemType::BF16, L, kvd, kvd},
                      Mat{dv.p, ElemType::BF16, int64_t(sal.size()), kvd, kvd}, static_cast<const int32_t*>(dcu.p),
                      static_cast<const QueryTile*>(dt.p), int(tiles.size()), static_cast<const uint64_t*>(dmask.p),
                      static_cast<const int32_t*>(dbase.p), static_cast<const int32_t*>(doff.p),
                      Mat{c_old.p, ElemType::BF16, nq, qd, qd}, dims, Mat{o.p, ElemType::F32, nq, qd, qd}, nullptr, s));
            });
            report(m.name, "attention approx 16 salient keys nq=" + std::to_string(nq), ams, aflop, bytes, pk, false);
        }
    }
}

}  // namespace

int main() {
    std::string why;
    const int   n = cuda_device_count(&why);
    if (n == 0) {
        std::printf("no CUDA device (%s): nothing to benchmark\n", why.c_str());
        return 0;
    }
    try {
        cudaDeviceProp prop{};
        CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
        const Peaks pk = device_peaks(0);
        std::printf("device: %s (sm_%d%d, %d SMs); peaks: %.1f TFLOP/s bf16 dense, %.1f TFLOP/s fp32, %.0f GB/s\n",
                    prop.name, prop.major, prop.minor, prop.multiProcessorCount, pk.bf16_tflops, pk.fp32_tflops,
                    pk.gbps);
        cudaStream_t s = nullptr;
        CUDA_CHECK(cudaStreamCreate(&s));
        cublasHandle_t h = nullptr;
        CUBLAS_CHECK(cublasCreate(&h));
        CUBLAS_CHECK(cublasSetStream(h, s));
        for (const ModelShape& m : kModels) bench_model(m, pk, s, h);
        (void)cublasDestroy(h);
        (void)cudaStreamDestroy(s);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cuda_bench_kernels: %s\n", e.what());
        return 1;
    }
    return 0;
}
