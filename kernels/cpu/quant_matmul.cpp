// The quantized product (kernels/cpu/quant_matmul.h): integer block dot products on int8 activations for few rows,
// fixed panels of W rows decoded to fp32 and multiplied by sgemm for many.
#include "kernels/cpu/quant_matmul.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "kernels/cpu/blas.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/quant_amx.h"
#include "kernels/cpu/quant_amx_int8.h"
#include "kernels/cpu/quant_decode.h"
#include "kernels/cpu/quant_dot.h"

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
    if (cpu_has_x86_64_v4()) return QuantIsa::Avx512;
    if (cpu_has_x86_64_v3()) return dot_isa_available(DotIsa::AvxVnni) ? QuantIsa::AvxVnni : QuantIsa::Avx2;
#endif
    return QuantIsa::Baseline;
}

std::atomic<QuantIsa>  g_isa{QuantIsa::Auto};
std::atomic<QuantPath> g_path{QuantPath::Auto};
std::atomic<bool>      g_allow_amx{true};

// The integer dot products of an instruction set, false for none.
bool dot_isa_for(QuantIsa isa, DotIsa* out) {
    switch (isa) {
        case QuantIsa::Avx512:
            *out = dot_isa_available(DotIsa::Vnni512) ? DotIsa::Vnni512 : DotIsa::Avx2;
            return true;
        case QuantIsa::AvxVnni:
            *out = DotIsa::AvxVnni;
            return true;
        case QuantIsa::Avx2:
            *out = DotIsa::Avx2;
            return true;
        default:
            return false;
    }
}

// Quantized rows of x (the integer path's activations), one growable buffer per calling thread.
uint8_t* act_scratch(size_t n) {
    thread_local std::vector<uint8_t> buf;
    if (buf.size() < n) buf.resize(n);
    return buf.data();
}

// W rows per integer-path task: small enough that a 4096-row W splits into hundreds of tasks.
constexpr int64_t kDotTaskRows = 16;
// W rows per AMX-INT8 task: four 16-row panels, so that x's per-block factors, computed once per task, cost little
// beside them; a 4096-row W still splits into 64 tasks.
constexpr int64_t kAmxInt8TaskRows = 64;

DecodeFn decode_fn(QuantIsa isa) {
#ifdef DYLLM_QUANT_HAVE_ISA
    if (isa == QuantIsa::Avx512) return decode_rows_v4;
    if (isa == QuantIsa::Avx2 || isa == QuantIsa::AvxVnni) return decode_rows_v3;
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

bool quant_isa_available(QuantIsa isa) {
    switch (isa) {
        case QuantIsa::Auto:
        case QuantIsa::Baseline:
            return true;
        case QuantIsa::Avx512:
            return detect_isa() == QuantIsa::Avx512;
        case QuantIsa::AvxVnni:
            return detect_isa() != QuantIsa::Baseline && dot_isa_available(DotIsa::AvxVnni);
        case QuantIsa::Avx2:
            return detect_isa() != QuantIsa::Baseline;
    }
    return false;
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
        case QuantIsa::AvxVnni:
            return "avx-vnni";
        case QuantIsa::Avx2:
            return "avx2";
        case QuantIsa::Baseline:
            return "baseline";
    }
    return "?";
}

void quant_force_path(QuantPath path) {
    g_path.store(path);
}

void quant_allow_amx(bool allow) {
    g_allow_amx.store(allow);
}

bool quant_amx_allowed() {
    return g_allow_amx.load();
}

bool quant_auto_may_use_amx() {
    // A forced instruction set below Avx512 leaves AMX out: that CPU would lack it.
    return quant_isa() == QuantIsa::Avx512 && quant_amx_allowed();
}

// Measured with tests/bench/bench_quant.cpp (W 4096 x 4096, one thread, best CPU time; an AVX-512 Xeon with
// AVX512-VNNI shared with other jobs, so rough figures, ratios from one run): the integer path beats decode + sgemm at
// every row count up to 256 for the K-quants (Q4_K 1 row 0.57 vs 3.5 ms, 33 rows 9.3 vs 22.5, 256 rows 74 vs 99;
// Q6_K 0.75 vs 8.2, 10.7 vs 26.7, 78 vs 113) and up to 128 for Q8_0 / Q4_0 (Q8_0 128 rows 56 vs 59, 256 rows 113 vs
// 117; Q4_0 59.5 vs 60.1, 124 vs 119), whose 8-lane kernels gain less per row from the tile.
int64_t quant_dot_max_rows(QuantType t) {
    switch (t) {
        case QuantType::Q4_K:
        case QuantType::Q6_K:
            return 256;
        case QuantType::Q8_0:
        case QuantType::Q4_0:
            return 128;
        default:
            return 0;
    }
}

// Measured with tests/bench/bench_quant.cpp (--m/--k 4096 x 4096, 12288 x 4096, 4096 x 12288, one thread, best CPU
// time of 3; a Xeon with AVX512-VNNI and AMX shared with other jobs, so rough figures): the row count where the AMX
// path overtakes the AVX512-VNNI integer path. Q4_K 7, 8, 8-12 (4096 x 4096 at 8 rows 1.94 vs 2.57 ms, at 4 rows 1.53
// vs 1.12); Q6_K 10, 12, 13 (12288 x 4096 at 12 rows 12.5 vs 12.9, at 8 rows 12.4 vs 8.8); Q8_0 5, 5, <= 4; Q4_0 4-5,
// <= 4, 5. Q5_K has no integer path and AMX beats decode + sgemm from 1 row (4096 x 4096: 2.5 vs 5.4 ms). The AMX
// path's time grows slowly with the rows: decoding W, a fixed cost, is most of it.
int64_t quant_amx_min_rows(QuantType t) {
    switch (t) {
        case QuantType::Q4_K:
            return 8;
        case QuantType::Q6_K:
            return 12;
        case QuantType::Q8_0:
        case QuantType::Q4_0:
            return 5;
        case QuantType::Q5_K:
            return 1;
    }
    return 1;
}

// Measured with tests/bench/bench_quant.cpp (12288 x 4096 and 4096 x 4096, one thread, best CPU time of 5; the Xeon
// with AMX above, shared with other jobs, so rough figures; ratios within one run): the AMX-INT8 path against the
// AVX512-VNNI integer path and the AMX-BF16 path. Q4_K, 12288 x 4096: 1 row 2.83 / 2.19 / 7.57 ms, 2 rows 3.50 /
// 4.92 / 7.36, 8 rows 5.29 / 8.21 / 16.6, 16 rows 6.38 / 14.8 / 8.55; 4096 x 4096 8 rows 1.32 / 2.16 / 1.85. Q8_0,
// 12288 x 4096: 1 row 5.80 / 9.09 / 14.4, 2 rows 5.49 / 9.33 / 13.7, 8 rows 6.94 / 19.3 / 16.9, 16 rows 7.92 / 27.8
// / 15.5; 4096 x 4096 2 rows 1.03 / 1.66 / 4.10, 16 rows 1.90 / 9.46 / 3.97. Q6_K against the integer path, 4096 x
// 12288: 2 rows 5.34 / 7.52, 8 rows 6.79 / 9.82; 32768 x 4096: 2 rows 16.5 / 18.1, 8 rows 20.3 / 24.8; 12288 x 4096
// 1 row 5.84 / 5.86 (at 4096 x 4096, which stays in the L3 cache between repetitions, the integer path is faster up
// to 4 rows: 1.74 / 1.24; a model's weights stream from memory). Its cost grows with the rows (each unit's
// tile of sums goes through memory to be scaled), the AMX-BF16 path's hardly: beyond 16 rows (one tile of x) that
// path takes over.
int64_t quant_amx_int8_min_rows(QuantType t) {
    return t == QuantType::Q4_K ? 2 : t == QuantType::Q8_0 ? 1 : t == QuantType::Q6_K ? 2 : 0;
}
int64_t quant_amx_int8_max_rows(QuantType t) {
    return quant_amx_int8_min_rows(t) > 0 ? kQuantAmxInt8MaxRows : 0;
}

void quant_matmul(CMatF x, QuantMat w, ConstMat bias, MatF y, ThreadPool& pool, bool f32_x) {
    if (y.rows == 0 || y.cols == 0) return;
    const int64_t   k = w.cols, m = y.cols, n = y.rows;
    const QuantPath path     = g_path.load();
    const bool      auto512  = path == QuantPath::Auto && quant_auto_may_use_amx();
    const bool      amx_int8 = k > 0 && !f32_x && quant_amx_int8_available() && quant_amx_int8_supported(w.type) &&
                          n <= kQuantAmxInt8MaxRows &&
                          (path == QuantPath::AmxInt8 ||
                           (auto512 && n >= quant_amx_int8_min_rows(w.type) && n <= quant_amx_int8_max_rows(w.type)));
    const bool amx = !amx_int8 && k > 0 && !f32_x && quant_amx_available() &&
                     (path == QuantPath::Amx || (auto512 && n >= quant_amx_min_rows(w.type)));
    DotIsa     dot_isa{};
    const bool dot = !amx && !amx_int8 && k > 0 && !f32_x && quant_dot_supported(w.type) &&
                     dot_isa_for(quant_isa(), &dot_isa) &&
                     (path == QuantPath::Dot || (path == QuantPath::Auto && n <= quant_dot_max_rows(w.type)));
    if (k == 0) {
        for (int64_t i = 0; i < n; ++i) std::fill(y.row(i), y.row(i) + m, 0.0f);
    } else if (amx) {
        quant_amx_matmul(x, w, y, pool);
    } else if (amx_int8) {
        // x quantized once per product as for the integer path, then tasks of kAmxInt8TaskRows W rows.
        const size_t   xs = quant_act_row_bytes(w.type, k);
        uint8_t* const xq = act_scratch(xs * size_t(n));
        pool.parallel_for(n, n * k,
                          [&](int64_t i, int) { quantize_act_row(w.type, x.row(i), xq + size_t(i) * xs, k); });
        pool.parallel_for((m + kAmxInt8TaskRows - 1) / kAmxInt8TaskRows, [&](int64_t t, int) {
            const int64_t o0 = t * kAmxInt8TaskRows, o1 = std::min(m, o0 + kAmxInt8TaskRows);
            quant_amx_int8_rows(xq, xs, n, w, o0, o1, MatF{y.data + o0, n, o1 - o0, y.ld});
        });
    } else if (dot) {
        // x quantized once per product (rows in parallel), then tasks of kDotTaskRows W rows, each streaming its rows
        // once against every row of x.
        const size_t   xs = quant_act_row_bytes(w.type, k);
        uint8_t* const xq = act_scratch(xs * size_t(n));
        pool.parallel_for(n, n * k,
                          [&](int64_t i, int) { quantize_act_row(w.type, x.row(i), xq + size_t(i) * xs, k); });
        pool.parallel_for((m + kDotTaskRows - 1) / kDotTaskRows, [&](int64_t t, int) {
            const int64_t o0 = t * kDotTaskRows, o1 = std::min(m, o0 + kDotTaskRows);
            quant_dot_rows(dot_isa, xq, xs, n, w, o0, o1, MatF{y.data + o0, n, o1 - o0, y.ld});
        });
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
