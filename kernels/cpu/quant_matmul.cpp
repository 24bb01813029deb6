// The quantized product (kernels/cpu/quant_matmul.h): fixed panels of W rows decoded to fp32, each multiplied by sgemm.
#include "kernels/cpu/quant_matmul.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "kernels/cpu/blas.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/quant_decode.h"

namespace dyllm::cpu {

namespace {

// Decodes W rows [r0, r1) into dst (row stride k); the loops are compiled once per instruction set below.
DYLLM_ALWAYS_INLINE void decode_rows_body(QuantMat w, int64_t r0, int64_t r1, float* dst) {
    for (int64_t r = r0; r < r1; ++r) qdec::row(w.type, w.row_ptr(r), dst + (r - r0) * w.cols, w.cols);
}

using DecodeFn = void (*)(QuantMat, int64_t, int64_t, float*);

#if defined(__GNUC__) && defined(__x86_64__)
__attribute__((target("arch=x86-64-v4"))) void decode_rows_v4(QuantMat w, int64_t r0, int64_t r1, float* dst) {
    decode_rows_body(w, r0, r1, dst);
}
__attribute__((target("arch=x86-64-v3"))) void decode_rows_v3(QuantMat w, int64_t r0, int64_t r1, float* dst) {
    decode_rows_body(w, r0, r1, dst);
}
#define DYLLM_QUANT_HAVE_ISA 1
#endif
void decode_rows_base(QuantMat w, int64_t r0, int64_t r1, float* dst) {
    decode_rows_body(w, r0, r1, dst);
}

QuantIsa detect_isa() {
#ifdef DYLLM_QUANT_HAVE_ISA
    if (__builtin_cpu_supports("x86-64-v4")) return QuantIsa::Avx512;
    if (__builtin_cpu_supports("x86-64-v3")) return QuantIsa::Avx2;
#endif
    return QuantIsa::Baseline;
}

std::atomic<QuantIsa> g_isa{QuantIsa::Auto};

DecodeFn decode_fn(QuantIsa isa) {
#ifdef DYLLM_QUANT_HAVE_ISA
    if (isa == QuantIsa::Avx512) return decode_rows_v4;
    if (isa == QuantIsa::Avx2) return decode_rows_v3;
#endif
    (void)isa;
    return decode_rows_base;
}

// One growable fp32 scratch per OS thread (the decoded W row or panel), kept between calls: pool threads of any pool,
// and callers of different pools, never share one.
float* scratch(size_t n) {
    thread_local std::vector<float> buf;
    if (buf.size() < n) buf.resize(n);
    return buf.data();
}

void add_bias(ConstMat bias, MatF y) {
    std::vector<float> b(size_t(y.cols));
    widen_row(bias.data, bias.type, b.data(), y.cols);
    for (int64_t i = 0; i < y.rows; ++i) {
        float* r = y.row(i);
        for (int64_t o = 0; o < y.cols; ++o) r[o] += b[size_t(o)];
    }
}

}  // namespace

int64_t quant_panel_rows(int64_t k) {
    const int64_t r = k > 0 ? kQuantPanelElems / k / 16 * 16 : 256;
    return std::clamp<int64_t>(r, 16, 256);
}

void quant_force_isa(QuantIsa isa) {
    g_isa.store(isa == QuantIsa::Auto ? detect_isa() : isa);
}

QuantIsa quant_isa() {
    QuantIsa isa = g_isa.load();
    if (isa == QuantIsa::Auto) {
        isa = detect_isa();
        g_isa.store(isa);
    }
    return isa;
}

const char* quant_isa_name(QuantIsa isa) {
    switch (isa) {
        case QuantIsa::Auto:
            return "auto";
        case QuantIsa::Avx512:
            return "avx512";
        case QuantIsa::Avx2:
            return "avx2";
        case QuantIsa::Baseline:
            return "baseline";
    }
    return "?";
}

void quant_matmul(CMatF x, QuantMat w, ConstMat bias, MatF y, ThreadPool& pool) {
    if (y.rows == 0 || y.cols == 0) return;
    const int64_t k = w.cols, m = y.cols, n = y.rows;
    if (k == 0) {
        for (int64_t i = 0; i < n; ++i) std::fill(y.row(i), y.row(i) + m, 0.0f);
    } else {
        // Fixed panels of decoded W rows, one single-threaded sgemm each into y's matching columns: every block is
        // read and decoded once per product, whatever the row count.
        const DecodeFn dec     = decode_fn(quant_isa());
        const int64_t  pr      = quant_panel_rows(k);
        const int64_t  n_tasks = (m + pr - 1) / pr;
        pool.parallel_for(n_tasks, [&](int64_t t, int) {
            const int64_t o0 = t * pr, mb = std::min(pr, m - o0);
            float* const  buf = scratch(size_t(pr * k));
            dec(w, o0, o0 + mb, buf);
            sgemm_nt(x, CMatF{buf, mb, k, k}, MatF{y.data + o0, n, mb, y.ld});
        });
    }
    if (bias.data) add_bias(bias, y);
}

void quant_gather_rows(QuantMat table, const int32_t* ids, MatF out) {
    const DecodeFn dec = decode_fn(quant_isa());
    for (int64_t i = 0; i < out.rows; ++i) {
        QuantMat one = table;
        one.data     = table.row_ptr(ids[i]);
        dec(one, 0, 1, out.row(i));
    }
}

}  // namespace dyllm::cpu
