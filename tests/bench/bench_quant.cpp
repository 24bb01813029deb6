// Quantized-product benchmark (not a test): per weight type and row count, the integer dot-product path (each
// instruction set) and the AMX path against decode + sgemm, next to the packed bf16 GEMM on the same shape. One line
// per row count.
//   bench_quant [--threads N] [--reps R] [--m M] [--k K] [--rows 1,33,..] [--amx-only]
// --amx-only times the bf16 GEMM and the AMX path alone (quicker A/B runs of the AMX decoders).
// Measured choices recorded in the code (with the figures): quant_dot_max_rows, quant_amx_min_rows
// (kernels/cpu/quant_matmul.cpp).
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
#include "kernels/cpu/packed_gemm.h"
#include "kernels/cpu/quant_amx.h"
#include "kernels/cpu/quant_amx_int8.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu/quant_matmul.h"
#include "kernels/cpu/ref/quant.h"

using namespace dyllm;
using namespace dyllm::cpu;

namespace {

double cpu_s() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Best process CPU time (all threads) of `reps` runs after a warm-up: the shared machine's wall times overstate.
double best_cpu_ms(int reps, const std::function<void()>& fn) {
    fn();
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const double c0 = cpu_s();
        fn();
        best = std::min(best, cpu_s() - c0);
    }
    return best * 1e3;
}

}  // namespace

int main(int argc, char** argv) {
    int                  threads = 1, reps = 10;
    bool                 amx_only = false;
    int64_t              m = 4096, k = 4096;
    std::vector<int64_t> rows_list = {1, 2, 4, 8, 16, 33, 64, 128, 256};
    for (int i = 1; i < argc; i += 2) {
        if (!std::strcmp(argv[i], "--amx-only")) {
            amx_only = true;
            --i;
            continue;
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "bench_quant: %s takes a value\n", argv[i]);
            return 2;
        }
        if (!std::strcmp(argv[i], "--threads"))
            threads = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--reps"))
            reps = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--m"))
            m = std::atoll(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--k"))
            k = std::atoll(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--rows")) {
            rows_list.clear();
            for (const char* p = argv[i + 1]; *p;) {
                char*           end = nullptr;
                const long long v   = std::strtoll(p, &end, 10);
                rows_list.push_back(end == p ? 0 : v);  // not a number: rejected below
                if (end == p) break;
                p = *end == ',' ? end + 1 : end;
            }
        } else {
            std::fprintf(stderr, "bench_quant: unknown flag %s (--threads, --reps, --m, --k, --rows, --amx-only)\n",
                         argv[i]);
            return 2;
        }
    }
    if (k % 256 != 0 || m < 256 || m % 256 != 0) {
        std::fprintf(stderr, "bench_quant: --k must be a multiple of 256 and --m of 256\n");
        return 2;
    }
    for (int64_t n : rows_list)
        if (n < 1 || n > 256) {
            std::fprintf(stderr, "bench_quant: --rows takes row counts from 1 to 256\n");
            return 2;
        }
    const size_t                          n_rows = rows_list.size();
    ThreadPool                            pool(threads);
    std::mt19937                          rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float>                    wf(size_t(256 * k));
    for (float& v : wf) v = u(rng);
    std::vector<float> x(size_t(256 * k)), y(size_t(256 * m));
    for (float& v : x) v = u(rng);

    // bf16 through the packed GEMM provider (the 256 rows repeated to m).
    std::vector<uint16_t> wb(size_t(m * k));
    for (int64_t r = 0; r < m; ++r)
        for (int64_t c = 0; c < k; ++c) wb[size_t(r * k + c)] = f32_to_bf16(wf[size_t((r % 256) * k + c)]);
    PackedGemm                          gemm(threads);
    std::string                         err;
    std::shared_ptr<const PackedWeight> pw;
    if (PackedGemm::supports(ElemType::BF16)) pw = gemm.pack(ConstMat{wb.data(), ElemType::BF16, m, k, k}, pool, &err);
    std::vector<double> bf16_ms(n_rows);
    for (size_t j = 0; j < n_rows; ++j) {
        const int64_t n = rows_list[j];
        if (pw)
            bf16_ms[j] = best_cpu_ms(reps, [&] {
                gemm.matmul(CMatF{x.data(), n, k, k}, *pw, ConstMat{}, MatF{y.data(), n, m, m}, pool);
            });
    }
    std::printf("W %lld x %lld, %d thread(s), best CPU ms of %d; bf16: %s; amx: %s\n", (long long)m, (long long)k,
                threads, reps, pw ? PackedGemm::provider().c_str() : "none", quant_amx_available() ? "yes" : "no");

    for (QuantType t : {QuantType::Q4_K, QuantType::Q6_K, QuantType::Q8_0, QuantType::Q4_0, QuantType::Q5_K}) {
        // 256 quantized rows repeated to m: the stream is m rows' bytes, the quantizer's search runs once.
        const size_t         rb = quant_row_bytes(t, k);
        std::vector<uint8_t> slab(rb * 256), wq(rb * size_t(m));
        for (int64_t r = 0; r < 256; ++r) quantize_row(t, wf.data() + r * k, slab.data() + size_t(r) * rb, k);
        for (int64_t r = 0; r < m; r += 256) std::memcpy(wq.data() + size_t(r) * rb, slab.data(), slab.size());
        const QuantMat w{wq.data(), t, m, k, int64_t(rb)};
        for (size_t j = 0; j < n_rows; ++j) {
            const int64_t n   = rows_list[j];
            auto          run = [&](QuantPath p) {
                quant_force_path(p);
                const double ms = best_cpu_ms(reps, [&] {
                    quant_matmul(CMatF{x.data(), n, k, k}, w, ConstMat{}, MatF{y.data(), n, m, m}, pool);
                });
                quant_force_path(QuantPath::Auto);
                return ms;
            };
            std::printf("%-5s n=%-3lld bf16 %7.2f ms", quant_name(t), (long long)n, bf16_ms[j]);
            if (!amx_only) std::printf("  decode+sgemm %7.2f", run(QuantPath::Decode));
            if (quant_amx_available()) {
                const double amx = run(QuantPath::Amx);
                std::printf("  amx-bf16 %7.2f (%.2fx bf16)", amx, pw ? amx / bf16_ms[j] : 0.0);
            }
            if (quant_amx_int8_available() && quant_amx_int8_supported(t) && n <= kQuantAmxInt8MaxRows) {
                const double amx8 = run(QuantPath::AmxInt8);
                std::printf("  amx-int8 %7.2f (%.2fx bf16)", amx8, pw ? amx8 / bf16_ms[j] : 0.0);
            }
            for (QuantIsa isa : {QuantIsa::Avx512, QuantIsa::AvxVnni, QuantIsa::Avx2}) {
                const bool ok = !amx_only && quant_isa_available(isa) && quant_dot_supported(t);
                if (!ok) continue;
                quant_force_isa(isa);
                const double dot = run(QuantPath::Dot);
                std::printf("  int8 %s %7.2f (%.2fx bf16)", quant_isa_name(isa), dot, pw ? dot / bf16_ms[j] : 0.0);
            }
            quant_force_isa(QuantIsa::Auto);
            std::printf("\n");
            std::fflush(stdout);
        }
    }
    return 0;
}
