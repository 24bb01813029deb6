// The op-test table (the shape of ggml's test-backend-ops): one OpCase table per Backend op, run over every backend
// make_backend can build, each result compared against kernels/cpu/ref computed from the values the backend really
// holds. This source is also compiled into test_cuda (tests/cuda/test_cuda_backend_ops.cpp includes it with
// DYLLM_OPS_CUDA_ONLY defined) so that `ctest -L cuda` runs the CUDA column of the same table.
//
// Tolerances: |got - ref| <= tol per element, ref in fp64 (or fp32 where the reference itself is fp32: rope, silu),
// built from the unit roundoff u of the precision each step really has (table kPrec below):
//   F32 u = 2^-24; BF16 u = 2^-8 (8 significant bits); F16 u = 2^-11 (11 bits) plus an absolute floor of 2^-25, half
//   the spacing of F16's subnormals (values under 2^-14 lose relative precision).
// An fp32 reduction of n terms in any order is within gamma_n ~ n u of the sum of |terms| (Higham, "Accuracy and
// Stability of Numerical Algorithms", 2nd ed., 3.1); each op's bound below is that with n the reduction length.
// Ops that copy or round values once through the shared converters (kernels/common/dtype_convert.h) must be exact.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/errors.h"
#include "kernels/common/dtype_convert.h"
#include "support/dtype_bytes.h"
#include "kernels/cpu/mat.h"
#include "kernels/cpu/ref/attention.h"
#include "kernels/cpu/ref/attention_approx.h"
#include "kernels/cpu/ref/attention_cols.h"
#include "kernels/cpu/ref/cosine.h"
#include "kernels/cpu/ref/elementwise.h"
#include "kernels/cpu/ref/embed.h"
#include "kernels/cpu/packed_gemm.h"
#include "kernels/cpu/ref/add_rows.h"
#include "kernels/cpu/ref/matmul.h"
#include "engine/quant_type.h"
#include "kernels/cpu/ref/quant.h"
#include "kernels/cpu/ref/rms_norm.h"
#include "kernels/cpu/ref/rope.h"
#include "kernels/cpu/ref/rows.h"
#include "kernels/cpu/ref/score_logits.h"
#include "kernels/cpu/ref/silu_mul.h"

namespace dyllm::ops_test {

// ---- precision table ----------------------------------------------------------------------------------------------
struct Prec {
    double u;      // unit roundoff (relative)
    double floor;  // absolute error floor of the format's subnormal range
};
inline Prec prec(DType t) {
    switch (t) {
        case DType::F16:
            return {std::ldexp(1.0, -11), std::ldexp(1.0, -25)};
        case DType::BF16:
            return {std::ldexp(1.0, -8), 0.0};  // fp32's exponent range: no early subnormals
        default:
            return {std::ldexp(1.0, -24), 0.0};
    }
}
constexpr double kU32 = 5.9604644775390625e-08;  // 2^-24

// ---- the backends under test --------------------------------------------------------------------------------------
struct OpBackend {
    std::string              label;  // "cpu", "cuda"
    std::unique_ptr<Backend> be;     // null when not available
    std::string              why_not;
};

// Every backend make_backend can build, created once per process. A backend that cannot start is listed with its
// reason and its cases are reported "not available" (never counted as passes); the reason is printed once.
inline std::vector<OpBackend>& op_backends() {
    static std::vector<OpBackend> list = [] {
        std::vector<OpBackend> l;
#ifdef DYLLM_OPS_CUDA_ONLY
        const BackendKind kinds[] = {BackendKind::Cuda};
#else
        const BackendKind kinds[] = {BackendKind::Cpu, BackendKind::Cuda};
#endif
        for (BackendKind k : kinds) {
            OpBackend b;
            b.label = backend_kind_name(k);
            try {
                b.be = make_backend(k, 2);
            } catch (const BackendError& e) {
                b.why_not = e.what();
#ifdef DYLLM_HAVE_CUDA
                if (k == BackendKind::Cuda)
                    std::printf("backend ops: CUDA is compiled in but no device is usable (%s): cuda not tested\n",
                                e.what());
                else
#endif
                    std::printf("backend ops: %s not available: %s\n", b.label.c_str(), e.what());
            }
            l.push_back(std::move(b));
        }
        return l;
    }();
    return list;
}

// Per op and backend: cases passed, failed, not supported (supports() said no), or not run (no backend).
struct Tally {
    int passed = 0, failed = 0, unsupported = 0, unavailable = 0;
};

inline void report(const char* op, const OpBackend& ob, const Tally& t) {
    if (!ob.be) {
        std::printf("backend ops: %-16s %-5s not available (%d cases not run, not counted)\n", op, ob.label.c_str(),
                    t.unavailable);
        return;
    }
    std::printf("backend ops: %-16s %-5s %d passed, %d failed, %d not supported\n", op, ob.label.c_str(), t.passed,
                t.failed, t.unsupported);
}

// ---- host data <-> backend tensors ---------------------------------------------------------------------------------
// Uniform values in [-scale, scale) from a fixed seed, rounded to dt (so the host holds exactly what dt can store).
inline std::vector<float> values(size_t n, uint32_t seed, DType dt = DType::F32, float scale = 1.0f) {
    std::mt19937                          rng(seed);
    std::uniform_real_distribution<float> d(-scale, scale);
    std::vector<float>                    v(n);
    for (float& x : v) {
        x = d(rng);
        if (dt == DType::BF16) x = round_to_bf16(x);
        if (dt == DType::F16) x = f16_to_f32(f32_to_f16(x));
    }
    return v;
}

using test::decode;
using test::encode;

// v rounded to dt (the shared RNE converters).
inline std::vector<float> rounded(const std::vector<float>& v, DType dt) {
    return decode(encode(v, dt), dt);
}

// A [rows, cols] activation or cache tensor of dtype dt on the backend holding v; the values a tensor holds.
inline Tensor put(Backend& be, DType dt, int64_t rows, int64_t cols, const std::vector<float>& v) {
    REQUIRE(v.size() == size_t(rows * cols));
    return test::upload_values(be, dt, rows, cols, v);
}
inline std::vector<float> get(Backend& be, const TensorView& t) {
    return test::download_values(be, t);
}

// A weight as the backend prepares it (CUDA stores F32 weights as BF16) and the values it really holds, which the
// reference then uses: the comparison measures the op, not the backend's choice of weight storage.
struct Weight {
    std::vector<uint8_t> host;  // kept alive: the CPU backend keeps the host view
    TensorView           view;
    std::vector<float>   held;
};
inline std::unique_ptr<Weight> weight(Backend& be, DType dt, int64_t rows, int64_t cols, const std::vector<float>& v) {
    auto w  = std::make_unique<Weight>();
    w->host = encode(v, dt);
    w->view = be.prepare_weight(TensorView::matrix(w->host.data(), dt, Device::Cpu, rows, cols), "test.weight");
    w->held = get(be, w->view);
    return w;
}

inline cpu::CMatF cm(const std::vector<float>& v, int64_t rows, int64_t cols) {
    return cpu::CMatF{v.data(), rows, cols, cols};
}
inline cpu::MatF mm(std::vector<float>& v, int64_t rows, int64_t cols) {
    return cpu::MatF{v.data(), rows, cols, cols};
}
inline cpu::ConstMat cmat_any(const std::vector<float>& v, int64_t rows, int64_t cols) {
    return cpu::ConstMat{v.data(), cpu::ElemType::F32, rows, cols, cols};
}

// |got - ref| <= tol(i) for every element (NaN fails). On failure: the first 5 mismatches in the message, and both
// tensors in test-failures/<name>.txt.
inline bool close(const std::string& name, const std::vector<float>& got, const std::vector<float>& ref,
                  const std::function<double(size_t)>& tol) {
    if (got.size() != ref.size()) {
        UNSCOPED_INFO(name << ": " << got.size() << " values, reference " << ref.size());
        return false;
    }
    size_t      bad = 0;
    std::string first;
    for (size_t i = 0; i < got.size(); ++i) {
        if (got[i] == ref[i]) continue;  // also an infinity on both sides (F16 saturation)
        const double d = std::fabs(double(got[i]) - double(ref[i]));
        if (!(d <= tol(i))) {
            if (bad < 5)
                first += "  [" + std::to_string(i) + "] got " + std::to_string(got[i]) + " ref " +
                         std::to_string(ref[i]) + " |diff| " + std::to_string(d) + " > " + std::to_string(tol(i)) +
                         "\n";
            if (++bad >= 10) break;
        }
    }
    if (bad == 0) return true;
    std::string fname = name;
    for (char& c : fname)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '_';
    std::error_code ec;
    std::filesystem::create_directories("test-failures", ec);
    std::ofstream f("test-failures/" + fname + ".txt");
    f << "index got ref\n";
    for (size_t i = 0; i < got.size(); ++i) f << i << ' ' << got[i] << ' ' << ref[i] << '\n';
    UNSCOPED_INFO(name << ": " << (bad >= 10 ? "10+" : std::to_string(bad)) << " mismatches\n" << first);
    return false;
}
inline bool exact(const std::string& name, const std::vector<float>& got, const std::vector<float>& ref) {
    return close(name, got, ref, [](size_t) { return 0.0; });
}

inline std::string case_name(const char* op, const OpBackend& ob, const std::string& params) {
    return std::string(op) + "_" + ob.label + "_" + params;
}
inline std::string dims(std::initializer_list<int64_t> d) {
    std::string s;
    for (int64_t x : d) s.append(s.empty() ? "" : "x").append(std::to_string(x));
    return s;
}

// Runs every case of one op's table on every backend and reports one line per backend. `run` returns true when the
// case passed; `needs` lists the (OpKind, DType) pairs the case uses, so a backend that does not support one reports
// the case "not supported" instead of failing.
template <class Case>
void run_table(const char* op, const std::vector<Case>& cases,
               const std::function<std::vector<std::pair<OpKind, DType>>(const Case&)>& needs,
               const std::function<bool(Backend&, const OpBackend&, const Case&)>&      run,
               bool backend_may_support_none = false) {
    for (OpBackend& ob : op_backends()) {
        Tally t;
        for (const Case& c : cases) {
            if (!ob.be) {
                ++t.unavailable;
                continue;
            }
            bool supported = true;
            for (const auto& [kind, dt] : needs(c)) supported = supported && ob.be->supports(kind, dt);
            if (!supported) {
                ++t.unsupported;
                continue;
            }
            const bool ok = run(*ob.be, ob, c);
            CHECK(ok);
            ++(ok ? t.passed : t.failed);
        }
        report(op, ob, t);
        // A table that tests nothing on an available backend is a broken table (unless the backend may take none of
        // its dtypes: CUDA takes no quantized view, it dequantizes quantized weights at load).
        if (ob.be && !(backend_may_support_none && t.unsupported == int(cases.size()))) CHECK(t.passed > 0);
    }
}

constexpr DType kFloatTypes[] = {DType::F32, DType::F16, DType::BF16};

// ---- embed ----------------------------------------------------------------------------------------------------------
struct EmbedCase {
    int64_t n_vocab, n_embd, n_ids;
    DType   dt;
};
inline std::vector<EmbedCase> embed_cases() {
    std::vector<EmbedCase> cs;
    for (DType dt : kFloatTypes)
        for (auto [v, e, n] : {std::tuple{1, 1, 1}, {97, 17, 7}, {50, 300, 0}, {33, 64, 65}, {4096, 1024, 129}})
            cs.push_back({v, e, n, dt});
    return cs;
}
inline bool run_embed(Backend& be, const OpBackend& ob, const EmbedCase& c) {
    const auto           w = weight(be, c.dt, c.n_vocab, c.n_embd, values(size_t(c.n_vocab * c.n_embd), 1, c.dt));
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < c.n_ids; ++i) ids.push_back(int32_t((i * 37 + 11) % c.n_vocab));
    if (c.n_ids > 1) ids[1] = int32_t(c.n_vocab - 1);  // the last row
    Tensor out = be.alloc(DType::F32, c.n_ids, c.n_embd);
    be.embed(w->view, ids, out);
    std::vector<float> ref(size_t(c.n_ids * c.n_embd));
    cpu::ref::embed(cmat_any(w->held, c.n_vocab, c.n_embd), ids.data(), mm(ref, c.n_ids, c.n_embd));
    // A row copy widened once: exact.
    return exact(case_name("embed", ob, dims({c.n_vocab, c.n_embd, c.n_ids}) + dtype_name(c.dt)), get(be, out), ref);
}

// ---- matmul ---------------------------------------------------------------------------------------------------------
struct MatMulCase {
    int64_t n, k, m;
    DType   dt;  // weight (and bias) storage
    bool    bias;
};
inline std::vector<MatMulCase> matmul_cases() {
    std::vector<MatMulCase> cs;
    for (DType dt : kFloatTypes)
        for (bool bias : {false, true})
            for (auto [n, k, m] : {std::tuple{1, 1, 1},
                                   {7, 17, 5},
                                   {65, 300, 33},
                                   {130, 64, 257},
                                   {3, 0, 4},
                                   {0, 8, 5},
                                   {200, 1024, 384}})
                cs.push_back({n, k, m, dt, bias});
    return cs;
}
inline bool run_matmul(Backend& be, const OpBackend& ob, const MatMulCase& c) {
    const auto xv = values(size_t(c.n * c.k), 3);
    const auto w  = weight(be, c.dt, c.m, c.k, values(size_t(c.m * c.k), 4, c.dt));
    const auto b  = c.bias ? weight(be, c.dt, 1, c.m, values(size_t(c.m), 5, c.dt)) : nullptr;
    Tensor     x = put(be, DType::F32, c.n, c.k, xv), y = be.alloc(DType::F32, c.n, c.m);
    be.matmul(x, w->view, b ? b->view : TensorView{}, y);
    std::vector<float> ref(size_t(c.n * c.m));
    cpu::ref::matmul(cm(xv, c.n, c.k), cmat_any(w->held, c.m, c.k), b ? cmat_any(b->held, 1, c.m) : cpu::ConstMat{},
                     mm(ref, c.n, c.m));
    // x is F32 on the CPU, except that packed BF16 weights multiply it rounded to bf16 (kernels/cpu/packed_gemm.h); the
    // CUDA backend rounds it to the weight's 16-bit storage for cuBLAS (kernels/cuda/cublas_gemm.cu): each product
    // then moves by u_x relative. fp32 accumulation over k terms plus the bias: (k + 2) u_32 of S = sum_c |x_c w_c| +
    // |b| (the sum of |terms|, which bounds cancellation).
    const bool          cpu_bf16_in = c.dt == DType::BF16 && cpu::PackedGemm::supports(cpu::ElemType::BF16);
    const DType         x_dt        = be.device() == Device::Cuda || cpu_bf16_in ? w->view.dtype : DType::F32;
    const double        rel         = prec(x_dt).u + double(c.k + 2) * kU32;
    std::vector<double> s(ref.size(), 0.0);
    for (int64_t i = 0; i < c.n; ++i)
        for (int64_t j = 0; j < c.m; ++j) {
            double a = b ? std::fabs(double(b->held[size_t(j)])) : 0.0;
            for (int64_t q = 0; q < c.k; ++q)
                a += std::fabs(double(xv[size_t(i * c.k + q)]) * double(w->held[size_t(j * c.k + q)]));
            s[size_t(i * c.m + j)] = a;
        }
    const double floor = double(c.k) * prec(x_dt).floor;  // |w| <= 1: subnormal x moves each product by <= floor
    return close(case_name("matmul", ob, dims({c.n, c.k, c.m}) + dtype_name(c.dt) + (c.bias ? "_bias" : "")),
                 get(be, y), ref, [&](size_t e) { return rel * s[e] + floor; });
}

// ---- quantized weights (matmul and embed) ---------------------------------------------------------------------------
constexpr DType kQuantTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

// A weight quantized row by row (cpu::quantize_row), prepared on the backend, and its values decoded on the host
// (cpu::dequantize_row): the reference multiplies exactly what the blocks hold.
struct QuantWeight {
    std::vector<uint8_t> host;
    TensorView           view;
    std::vector<float>   held;
    cpu::QuantMat        qm;
};
inline std::unique_ptr<QuantWeight> quant_weight(Backend& be, DType dt, int64_t rows, int64_t cols, uint32_t seed) {
    auto         w  = std::make_unique<QuantWeight>();
    const auto   v  = values(size_t(rows * cols), seed);
    const size_t rb = dtype_row_bytes(dt, cols);
    w->host.assign(std::max<size_t>(1, rb * size_t(rows)), 0);
    w->held.resize(size_t(rows * cols));
    for (int64_t r = 0; r < rows; ++r) {
        cpu::quantize_row(quant_of(dt), v.data() + r * cols, w->host.data() + size_t(r) * rb, cols);
        cpu::dequantize_row(quant_of(dt), w->host.data() + size_t(r) * rb, w->held.data() + r * cols, cols);
    }
    w->view = be.prepare_weight(TensorView::matrix(w->host.data(), dt, Device::Cpu, rows, cols), "test.qweight");
    w->qm   = cpu::QuantMat{w->host.data(), quant_of(dt), rows, cols, int64_t(rb)};
    return w;
}

inline std::vector<MatMulCase> quant_matmul_cases() {
    std::vector<MatMulCase> cs;
    for (DType dt : kQuantTypes)
        for (bool bias : {false, true})
            for (auto [n, k, m] : {std::tuple{1, 256, 1}, {3, 512, 7}, {17, 256, 33}, {65, 768, 130}, {0, 256, 5}})
                cs.push_back({n, k, m, dt, bias});
    return cs;
}
inline bool run_quant_matmul(Backend& be, const OpBackend& ob, const MatMulCase& c) {
    const auto xv = values(size_t(c.n * c.k), 3);
    const auto w  = quant_weight(be, c.dt, c.m, c.k, 4);
    const auto bv = values(size_t(c.m), 5);
    Tensor     x = put(be, DType::F32, c.n, c.k, xv), y = be.alloc(DType::F32, c.n, c.m);
    Tensor     b = put(be, DType::F32, 1, c.m, bv);
    be.matmul(x, w->view, c.bias ? b.view() : TensorView{}, y);
    std::vector<float> ref(size_t(c.n * c.m));
    cpu::ref::quant_matmul(cm(xv, c.n, c.k), w->qm, c.bias ? cmat_any(bv, 1, c.m) : cpu::ConstMat{}, mm(ref, c.n, c.m));
    // x stays F32 and the decoded weights are the reference's exact values, so only the fp32 accumulation over k
    // terms plus the bias differs from the fp64 sum: (k + 2) u_32 of S = sum_c |x_c w_c| + |b|.
    const double        rel = double(c.k + 2) * kU32;
    std::vector<double> s(ref.size(), 0.0);
    for (int64_t i = 0; i < c.n; ++i)
        for (int64_t j = 0; j < c.m; ++j) {
            double a = c.bias ? std::fabs(double(bv[size_t(j)])) : 0.0;
            for (int64_t q = 0; q < c.k; ++q)
                a += std::fabs(double(xv[size_t(i * c.k + q)]) * double(w->held[size_t(j * c.k + q)]));
            s[size_t(i * c.m + j)] = a;
        }
    return close(case_name("matmul", ob, dims({c.n, c.k, c.m}) + dtype_name(c.dt) + (c.bias ? "_bias" : "")),
                 get(be, y), ref, [&](size_t e) { return rel * s[e]; });
}

inline std::vector<EmbedCase> quant_embed_cases() {
    std::vector<EmbedCase> cs;
    for (DType dt : kQuantTypes)
        for (auto [v, e, n] : {std::tuple{1, 256, 1}, {97, 512, 7}, {50, 256, 0}, {300, 768, 65}})
            cs.push_back({v, e, n, dt});
    return cs;
}
inline bool run_quant_embed(Backend& be, const OpBackend& ob, const EmbedCase& c) {
    const auto           w = quant_weight(be, c.dt, c.n_vocab, c.n_embd, 1);
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < c.n_ids; ++i) ids.push_back(int32_t((i * 37 + 11) % c.n_vocab));
    if (c.n_ids > 1) ids[1] = int32_t(c.n_vocab - 1);
    Tensor out = be.alloc(DType::F32, c.n_ids, c.n_embd);
    be.embed(w->view, ids, out);
    std::vector<float> ref(size_t(c.n_ids * c.n_embd));
    cpu::ref::embed(cmat_any(w->held, c.n_vocab, c.n_embd), ids.data(), mm(ref, c.n_ids, c.n_embd));
    // A row decoded block by block: the same fp32 values as dequantize_row, exactly.
    return exact(case_name("embed", ob, dims({c.n_vocab, c.n_embd, c.n_ids}) + dtype_name(c.dt)), get(be, out), ref);
}

// ---- rms_norm -------------------------------------------------------------------------------------------------------
struct RmsNormCase {
    int64_t n, d;
    DType   dt;  // weight storage
};
inline std::vector<RmsNormCase> rms_norm_cases() {
    std::vector<RmsNormCase> cs;
    for (DType dt : kFloatTypes)
        for (auto [n, d] : {std::pair{1, 1}, {7, 17}, {130, 300}, {0, 8}, {3, 129}, {64, 4096}})
            cs.push_back({n, d, dt});
    return cs;
}
inline bool run_rms_norm(Backend& be, const OpBackend& ob, const RmsNormCase& c) {
    const auto xv = values(size_t(c.n * c.d), 6, DType::F32, 3.0f);
    const auto w  = weight(be, c.dt, 1, c.d, values(size_t(c.d), 7, c.dt));
    Tensor     x = put(be, DType::F32, c.n, c.d, xv), y = be.alloc(DType::F32, c.n, c.d);
    be.rms_norm(x, w->view, 1e-5f, y);
    std::vector<float> ref(size_t(c.n * c.d));
    cpu::ref::rms_norm(cm(xv, c.n, c.d), cmat_any(w->held, 1, c.d), 1e-5f, mm(ref, c.n, c.d));
    // Sum of d squares in fp32: d u relative, halved by the rsqrt; then rsqrt and two products: a few u more.
    const std::string name = case_name("rms_norm", ob, dims({c.n, c.d}) + dtype_name(c.dt));
    const auto        tol  = [&](size_t e) { return (double(c.d) + 8.0) * kU32 * std::fabs(double(ref[e])) + 1e-7; };
    const auto        got  = get(be, y);
    bool              ok   = close(name, got, ref, tol);
    be.rms_norm(x, w->view, 1e-5f, x);  // in place: the same values
    return exact(name + "_inplace", get(be, x), got) && ok;
}

// ---- rope -----------------------------------------------------------------------------------------------------------
struct RopeCase {
    int64_t n;
    int     n_head, head_dim;
    float   theta;
    DType   dt;  // x: only F32 is supported by the current backends; F16/BF16 report "not supported"
};
inline std::vector<RopeCase> rope_cases() {
    std::vector<RopeCase> cs;
    for (DType dt : kFloatTypes)
        for (float theta : {10000.0f, 500000.0f})
            for (auto [n, h, d] : {std::tuple{1, 1, 2}, {7, 3, 16}, {65, 1, 128}, {0, 2, 8}, {9, 5, 6}, {512, 32, 128}})
                cs.push_back({n, h, d, theta, dt});
    return cs;
}
inline bool run_rope(Backend& be, const OpBackend& ob, const RopeCase& c) {
    const int64_t        cols = int64_t(c.n_head) * c.head_dim;
    const auto           xv   = values(size_t(c.n * cols), 8);
    std::vector<int32_t> pos;
    for (int64_t i = 0; i < c.n; ++i) pos.push_back(int32_t((i * 37) % 1500));  // up to ~1500 rad: large arguments
    Tensor x = put(be, c.dt, c.n, cols, xv);
    be.rope(x, pos, c.n_head, c.head_dim, c.theta);
    std::vector<float> ref = xv;
    cpu::ref::rope(mm(ref, c.n, cols), pos.data(), c.n_head, c.head_dim, c.theta);
    // The angles are the same fp32 values on every backend (kernels/common/scalar_math.h); cos/sin may differ by a few
    // ulp (CUDA's sinf/cosf within 2 ulp, glibc's or libmvec's within 4: CUDA C++ Programming Guide, "Mathematical
    // Functions"), so each output x1 cos - x2 sin moves by <= ~6 ulp (2^-23 relative) of |x1| + |x2|: bound 20 u.
    const int half = c.head_dim / 2;
    return close(case_name("rope", ob, dims({c.n, c.n_head, c.head_dim}) + "_theta" + std::to_string(int(c.theta))),
                 get(be, x), ref, [&](size_t e) {
                     const size_t base = e - e % size_t(c.head_dim), i = (e - base) % size_t(half);
                     const double mag = std::fabs(double(xv[base + i])) + std::fabs(double(xv[base + i + half]));
                     return 20.0 * kU32 * mag;
                 });
}

// ---- add, sub, copy -------------------------------------------------------------------------------------------------
struct ElementwiseCase {
    int64_t n, w;
    DType   a, b, y;  // copy uses a (src) and y (dst)
};
inline std::vector<ElementwiseCase> elementwise_cases() {
    std::vector<ElementwiseCase> cs;
    for (DType a : kFloatTypes)
        for (DType y : kFloatTypes)
            for (auto [n, w] : {std::pair{1, 1}, {7, 17}, {130, 300}, {0, 5}, {3, 1025}, {512, 4096}})
                cs.push_back({n, w, a, DType::F32, y});
    cs.push_back({11, 37, DType::BF16, DType::BF16, DType::BF16});
    return cs;
}
// y = a +/- b in fp32 on the stored values, rounded once to y's dtype by the shared converter: exact.
inline bool run_binary(Backend& be, const OpBackend& ob, const ElementwiseCase& c, bool subtract) {
    const auto av = values(size_t(c.n * c.w), 9, c.a), bv = values(size_t(c.n * c.w), 10, c.b);
    Tensor     a = put(be, c.a, c.n, c.w, av), b = put(be, c.b, c.n, c.w, bv), y = be.alloc(c.y, c.n, c.w);
    subtract ? be.sub(a, b, y) : be.add(a, b, y);
    std::vector<float> ref(av.size());
    subtract ? cpu::ref::sub(cm(av, c.n, c.w), cm(bv, c.n, c.w), mm(ref, c.n, c.w))
             : cpu::ref::add(cm(av, c.n, c.w), cm(bv, c.n, c.w), mm(ref, c.n, c.w));
    const std::string p = dims({c.n, c.w}) + dtype_name(c.a) + dtype_name(c.b) + dtype_name(c.y);
    return exact(case_name(subtract ? "sub" : "add", ob, p), get(be, y), rounded(ref, c.y));
}
// dst = src converted through fp32 by the shared converters (the reference is the conversion itself): exact.
inline bool run_copy(Backend& be, const OpBackend& ob, const ElementwiseCase& c) {
    const auto av = values(size_t(c.n * c.w), 11, c.a, 70000.0f);  // beyond F16's range: saturation to inf
    Tensor     s = put(be, c.a, c.n, c.w, av), d = be.alloc(c.y, c.n, c.w);
    be.copy(s, d);
    return exact(case_name("copy", ob, dims({c.n, c.w}) + dtype_name(c.a) + dtype_name(c.y)), get(be, d),
                 rounded(av, c.y));
}

// ---- silu_mul -------------------------------------------------------------------------------------------------------
struct SiluMulCase {
    int64_t n, f;
    DType   dt;  // gate/up/y: F32 only today; F16/BF16 report "not supported"
};
inline std::vector<SiluMulCase> silu_mul_cases() {
    std::vector<SiluMulCase> cs;
    for (DType dt : kFloatTypes)
        for (auto [n, f] : {std::pair{1, 1}, {7, 17}, {130, 300}, {0, 5}, {5, 1023}, {256, 5632}})
            cs.push_back({n, f, dt});
    return cs;
}
inline bool run_silu_mul(Backend& be, const OpBackend& ob, const SiluMulCase& c) {
    const auto gv = values(size_t(c.n * c.f), 12, c.dt, 8.0f), uv = values(size_t(c.n * c.f), 13, c.dt);
    Tensor     g = put(be, c.dt, c.n, c.f, gv), u = put(be, c.dt, c.n, c.f, uv), y = be.alloc(c.dt, c.n, c.f);
    be.silu_mul(g, u, y);
    std::vector<float> ref(gv.size());
    cpu::ref::silu_mul(cm(gv, c.n, c.f), cm(uv, c.n, c.f), mm(ref, c.n, c.f));
    // expf within 2 ulp on CUDA, 4 for glibc/libmvec; then 1 + e, a division and a product (0.5 ulp each): < 8 ulp of
    // |y|, bound at 16 ulp (32 u); 1e-30 keeps an exact zero exact.
    const std::string name = case_name("silu_mul", ob, dims({c.n, c.f}) + dtype_name(c.dt));
    const auto        tol  = [&](size_t e) { return 32.0 * kU32 * std::fabs(double(ref[e])) + 1e-30; };
    const auto        got  = get(be, y);
    const bool        ok   = close(name, got, ref, tol);
    be.silu_mul(g, u, g);  // y aliases gate: the same values
    return exact(name + "_inplace", get(be, g), got) && ok;
}

// ---- gather_rows, scatter_rows --------------------------------------------------------------------------------------
struct RowsCase {
    int64_t rows, cols;
    DType   src, dst;
    bool    empty;  // an empty index list
};
inline std::vector<RowsCase> rows_cases() {
    std::vector<RowsCase> cs;
    for (DType s : kFloatTypes)
        for (DType d : {DType::F32, DType::BF16})
            for (auto [r, c] : {std::pair{1, 1}, {70, 17}, {70, 300}, {2048, 1024}}) cs.push_back({r, c, s, d, false});
    cs.push_back({70, 17, DType::F32, DType::F32, true});
    cs.push_back({70, 17, DType::BF16, DType::BF16, true});
    return cs;
}
inline std::vector<int32_t> row_indices(const RowsCase& c) {
    if (c.empty) return {};
    std::vector<int32_t> idx;
    for (int64_t i = 0; i < std::min<int64_t>(c.rows, 65); ++i) idx.push_back(int32_t((i * 29 + 5) % c.rows));
    idx.push_back(int32_t(c.rows - 1));  // the last row, and a repeat when rows == 1
    return idx;
}
// Row copies converted through fp32 by the shared converters: exact.
inline bool run_gather(Backend& be, const OpBackend& ob, const RowsCase& c) {
    const auto                 sv  = values(size_t(c.rows * c.cols), 14, c.src);
    const std::vector<int32_t> idx = row_indices(c);
    const int64_t              n   = int64_t(idx.size());
    Tensor                     s = put(be, c.src, c.rows, c.cols, sv), d = be.alloc(c.dst, n, c.cols);
    be.gather_rows(s, idx, d);
    std::vector<float> ref(size_t(n * c.cols));
    cpu::ref::gather_rows(cmat_any(sv, c.rows, c.cols), idx.data(), n, ref.data(), cpu::ElemType::F32, c.cols);
    const std::string p = dims({c.rows, c.cols, n}) + dtype_name(c.src) + dtype_name(c.dst);
    return exact(case_name("gather_rows", ob, p), get(be, d), rounded(ref, c.dst));
}
inline bool run_scatter(Backend& be, const OpBackend& ob, const RowsCase& c) {
    std::vector<int32_t> idx = row_indices(c);
    std::sort(idx.begin(), idx.end());
    idx.erase(std::unique(idx.begin(), idx.end()), idx.end());  // scatter targets distinct rows
    const int64_t n  = int64_t(idx.size());
    const auto    sv = values(size_t(n * c.cols), 15, c.src);
    const auto    dv = values(size_t(c.rows * c.cols), 16, c.dst);
    Tensor        s = put(be, c.src, n, c.cols, sv), d = put(be, c.dst, c.rows, c.cols, dv);
    be.scatter_rows(s, idx, d);
    std::vector<float> ref = dv;
    cpu::ref::scatter_rows(cmat_any(sv, n, c.cols), idx.data(), n, ref.data(), cpu::ElemType::F32, c.cols);
    const std::string p = dims({c.rows, c.cols, n}) + dtype_name(c.src) + dtype_name(c.dst);
    return exact(case_name("scatter_rows", ob, p), get(be, d), rounded(ref, c.dst));
}

// ---- add_rows -------------------------------------------------------------------------------------------------------
// The row cases with an F32 destination (y is an activation); the index list repeats a row when rows == 1.
inline std::vector<RowsCase> add_rows_cases() {
    std::vector<RowsCase> cs;
    for (const RowsCase& c : rows_cases())
        if (c.dst == DType::F32) cs.push_back(c);
    return cs;
}
// One exact widening and one fp32 addition per element, as the reference: exact. It must also equal, bit for bit,
// the gather_rows + add it replaces in DyLLM's sparse layer (so no decode changes).
inline bool run_add_rows(Backend& be, const OpBackend& ob, const RowsCase& c) {
    const auto                 sv  = values(size_t(c.rows * c.cols), 17, c.src);
    const std::vector<int32_t> idx = row_indices(c);
    const int64_t              n   = int64_t(idx.size());
    const auto                 yv  = values(size_t(n * c.cols), 18);
    Tensor                     s = put(be, c.src, c.rows, c.cols, sv), y = put(be, DType::F32, n, c.cols, yv);
    be.add_rows(s, idx, y);
    std::vector<float> ref = yv;
    cpu::ref::add_rows(cmat_any(sv, c.rows, c.cols), idx.data(), n, ref.data(), c.cols);
    Tensor y2 = put(be, DType::F32, n, c.cols, yv), g = be.alloc(DType::F32, n, c.cols);
    be.gather_rows(s, idx, g);
    be.add(y2, g, y2);
    const std::string p   = dims({c.rows, c.cols, n}) + dtype_name(c.src);
    const auto        got = get(be, y);
    const bool        ok  = exact(case_name("add_rows", ob, p), got, ref);
    return exact(case_name("add_rows_vs_gather_add", ob, p), got, get(be, y2)) && ok;
}

// ---- cosine_rows ----------------------------------------------------------------------------------------------------
struct CosineCase {
    int64_t n, w;
    DType   a, b;
};
inline std::vector<CosineCase> cosine_cases() {
    std::vector<CosineCase> cs;
    for (DType a : kFloatTypes)
        for (auto [n, w] : {std::pair{1, 1}, {7, 17}, {130, 512}, {0, 4}, {5, 4097}, {1024, 4096}})
            cs.push_back({n, w, a, a == DType::F16 ? DType::F32 : a});
    return cs;
}
inline bool run_cosine(Backend& be, const OpBackend& ob, const CosineCase& c) {
    auto av = values(size_t(c.n * c.w), 17), bv = values(size_t(c.n * c.w), 18);
    for (int64_t j = 0; j < c.w && c.n > 0; ++j) {
        bv[size_t(j)] = av[size_t(j)] * 0.5f + bv[size_t(j)] * 1e-3f;  // row 0 nearly parallel: cos near 1
        if (c.n > 1) av[size_t(c.w + j)] = 0.0f;                       // row 1 of a is zero: the clamp path
    }
    av                   = rounded(av, c.a);
    bv                   = rounded(bv, c.b);
    Tensor             a = put(be, c.a, c.n, c.w, av), b = put(be, c.b, c.n, c.w, bv);
    std::vector<float> got(size_t(c.n)), ref(size_t(c.n));
    be.cosine_rows(a, b, got);
    cpu::ref::cosine_rows(cm(av, c.n, c.w), cm(bv, c.n, c.w), ref.data());
    // Dot and both norms are fp32 sums of w terms: each within w u of its sum of |terms| (<= |a||b| by Cauchy-Schwarz
    // for the dot), so |d cos| <= ~2 (w + 4) u; bound at twice that.
    return close(case_name("cosine_rows", ob, dims({c.n, c.w}) + dtype_name(c.a) + dtype_name(c.b)), got, ref,
                 [&](size_t) { return 4.0 * (double(c.w) + 4.0) * kU32; });
}

// ---- score_logits ---------------------------------------------------------------------------------------------------
struct ScoreCase {
    int64_t   n, vocab;
    ScoreKind kind;
    DType     dt;  // logits: F32 only; F16/BF16 report "not supported"
};
inline std::vector<ScoreCase> score_cases() {
    std::vector<ScoreCase> cs;
    for (DType dt : kFloatTypes)
        for (ScoreKind k : {ScoreKind::Confidence, ScoreKind::NegEntropy})
            for (auto [n, v] : {std::pair{1, 2}, {7, 300}, {65, 1500}, {0, 10}, {3, 1}, {16, 126464}})
                cs.push_back({n, v, k, dt});
    return cs;
}
inline bool run_score(Backend& be, const OpBackend& ob, const ScoreCase& c) {
    auto lv = values(size_t(c.n * c.vocab), 19, DType::F32, 4.0f);
    // Ties: row 0 has its maximum twice (the lower id wins); row 1's maximum is banned.
    if (c.n > 0 && c.vocab > 1) lv[0] = lv[size_t(c.vocab - 1)] = 50.0f;
    if (c.n > 1 && c.vocab > 2) lv[size_t(c.vocab + 1)] = 60.0f;
    const std::vector<int32_t> banned =
        c.vocab > 2 ? std::vector<int32_t>{1, int32_t(c.vocab - 2), 1} : std::vector<int32_t>{};
    Tensor               l = put(be, c.dt, c.n, c.vocab, lv);
    std::vector<int32_t> tok(size_t(c.n)), tok_ref(size_t(c.n));
    std::vector<float>   sc(size_t(c.n)), sc_ref(size_t(c.n));
    be.score_logits(l, c.kind, banned, tok, sc);
    cpu::ref::score_logits(cm(lv, c.n, c.vocab),
                           c.kind == ScoreKind::Confidence ? cpu::ScoreRule::Confidence : cpu::ScoreRule::NegEntropy,
                           banned.data(), int64_t(banned.size()), tok_ref.data(), sc_ref.data());
    const std::string name =
        case_name("score_logits", ob, dims({c.n, c.vocab}) + (c.kind == ScoreKind::Confidence ? "_conf" : "_negent"));
    // Tokens: the same argmax of the same fp32 values, exact. Scores: the normaliser (and the entropy sum) of V exps in
    // fp32: V u relative of max(1, |score|) (|p log p| <= 1/e per term), plus a few ulp of expf/logf.
    bool ok = tok == tok_ref;
    if (!ok) UNSCOPED_INFO(name << ": tokens differ from the reference");
    return close(name, sc, sc_ref,
                 [&](size_t e) {
                     return 2.0 * (double(c.vocab) + 8.0) * kU32 * std::max(1.0, std::fabs(double(sc_ref[e]))) + 1e-6;
                 }) &&
           ok;
}

// ---- attention, attention_approx -----------------------------------------------------------------------------------
struct AttnCase {
    std::vector<int32_t> lens;  // keys per sequence
    int                  n_head, n_kv_head, head_dim;
    bool                 subset;         // query rows: every key row (a FULL step) or a scattered subset (salient rows)
    DType                kv;             // k, v, dv, c_old storage
    int                  sal_every = 0;  // approx: every sal_every-th key is salient (0: none)
};
inline std::vector<AttnCase> attn_shapes() {
    // Sizes around the kernels' tiles (64 keys, 16 query units), GQA 1:1, 4:1, 7:1, 32:1, an empty sequence, zero
    // query rows, and a large case.
    return {{{1, 65, 130}, 4, 4, 16, false, DType::F32}, {{63, 64}, 8, 2, 64, false, DType::F32},
            {{1, 1}, 7, 1, 128, false, DType::F32},      {{130, 0, 17}, 7, 1, 64, false, DType::F32},
            {{40, 3}, 32, 1, 256, false, DType::F32},    {{9, 0, 21}, 3, 3, 10, false, DType::F32},
            {{0}, 2, 1, 8, false, DType::F32},           {{300}, 8, 8, 128, false, DType::F32}};
}
inline std::vector<AttnCase> attention_cases() {
    std::vector<AttnCase> cs;
    for (DType kv : kFloatTypes)
        for (bool subset : {false, true})
            for (AttnCase a : attn_shapes()) {
                a.subset = subset;
                a.kv     = kv;
                cs.push_back(a);
            }
    return cs;
}
inline std::vector<AttnCase> attention_approx_cases() {
    std::vector<AttnCase> cs;
    for (DType kv : kFloatTypes)
        for (int every : {0, 1, 5, 64})
            for (bool subset : {false, true})
                for (AttnCase a : attn_shapes()) {
                    a.subset    = subset;
                    a.kv        = kv;
                    a.sal_every = every;
                    cs.push_back(a);
                }
    return cs;
}

inline std::vector<int32_t> offsets(const std::vector<int32_t>& lens) {
    std::vector<int32_t> cu(lens.size() + 1, 0);
    std::partial_sum(lens.begin(), lens.end(), cu.begin() + 1);
    return cu;
}
// q rows: every row of every sequence in order, or a few rows per sequence, sequences in reverse and interleaved.
inline std::vector<int32_t> query_seqs(const std::vector<int32_t>& cu_k, bool subset) {
    std::vector<int32_t> q_seq;
    const int            n_seq = int(cu_k.size()) - 1;
    if (!subset) {
        for (int b = 0; b < n_seq; ++b)
            for (int j = cu_k[size_t(b)]; j < cu_k[size_t(b) + 1]; ++j) q_seq.push_back(b);
        return q_seq;
    }
    for (int b = n_seq - 1; b >= 0; --b)
        for (int j = 0; j < std::min(5, cu_k[size_t(b) + 1] - cu_k[size_t(b)]); ++j) {
            q_seq.push_back(b);
            if (j % 2 == 1) q_seq.push_back(0);
        }
    return q_seq;
}
inline std::string attn_name(const AttnCase& a) {
    std::string s;
    for (int32_t l : a.lens) s += std::to_string(l) + "-";
    return s + dims({a.n_head, a.n_kv_head, a.head_dim}) + (a.subset ? "_subset" : "_full") + dtype_name(a.kv) +
           "_sal" + std::to_string(a.sal_every);
}
// The error of a softmax-weighted sum over nk keys (fp32 on every backend): the scores q.k/sqrt(D) are sums of D
// terms, each |q_c k_c| <= 1 here, so they move by <= (D + 2) u sqrt(D), moving each weight by twice that relative;
// the normaliser and the weighted sum add (nk + 16) u (expf ulps included). Times the value scale; bound at twice
// the sum.
inline double attn_tol(const AttnCase& a, int64_t nk, double vmax) {
    const double ds = (double(a.head_dim) + 2.0) * kU32 * std::sqrt(double(a.head_dim));
    return 2.0 * (2.0 * ds + (double(nk) + 16.0) * kU32) * vmax;
}

inline bool run_attention(Backend& be, const OpBackend& ob, const AttnCase& a) {
    const auto    cu_k  = offsets(a.lens);
    const auto    q_seq = query_seqs(cu_k, a.subset);
    const int64_t nq = int64_t(q_seq.size()), nk = cu_k.back();
    const int64_t qd = int64_t(a.n_head) * a.head_dim, kvd = int64_t(a.n_kv_head) * a.head_dim;
    const auto    qv = values(size_t(nq * qd), 20), kv = values(size_t(nk * kvd), 21, a.kv),
               vv = values(size_t(nk * kvd), 22, a.kv);
    Tensor q = put(be, DType::F32, nq, qd, qv), k = put(be, a.kv, nk, kvd, kv), v = put(be, a.kv, nk, kvd, vv);
    Tensor out = be.alloc(DType::F32, nq, qd), lse = be.alloc(DType::F32, nq, a.n_head);
    be.attention(q, q_seq, k, v, cu_k, AttentionShape{a.n_head, a.n_kv_head, a.head_dim}, out, lse);
    std::vector<float> ref(size_t(nq * qd)), ref_lse(size_t(nq * a.n_head));
    cpu::ref::attention(cm(qv, nq, qd), q_seq.data(), cm(kv, nk, kvd), cm(vv, nk, kvd), cu_k.data(),
                        cpu::AttnDims{a.n_head, a.n_kv_head, a.head_dim}, mm(ref, nq, qd), mm(ref_lse, nq, a.n_head));
    const double tol = attn_tol(a, nk, 1.0) + 1e-7;
    bool         ok  = close(case_name("attention", ob, attn_name(a)), get(be, out), ref, [&](size_t) { return tol; });
    // lse = max + log(sum): the scores' error plus the normaliser's relative error, both inside attn_tol's bound for
    // unit values; -inf (a sequence without keys) must match exactly.
    const auto got_lse = get(be, lse);
    for (size_t e = 0; e < ref_lse.size(); ++e)
        if (std::isinf(ref_lse[e]) != std::isinf(got_lse[e])) ok = false;
    std::vector<float> fin_ref(ref_lse), fin_got(got_lse);
    for (size_t e = 0; e < ref_lse.size(); ++e)
        if (std::isinf(ref_lse[e])) fin_ref[e] = fin_got[e] = 0.0f;
    return close(case_name("attention_lse", ob, attn_name(a)), fin_got, fin_ref,
                 [&](size_t e) { return tol + 2.0 * kU32 * std::fabs(double(fin_ref[e])) + 1e-6; }) &&
           ok;
}

// The salient keys of a case: every sal_every-th key of each sequence but the last of several (which keeps an empty
// set: empty per-sequence sets are legal).
inline void salient_keys(const AttnCase& a, const std::vector<int32_t>& cu_k, std::vector<int32_t>& sal_k,
                         std::vector<int32_t>& cu_sal) {
    const int n_seq = int(a.lens.size());
    sal_k.clear();
    cu_sal.assign(1, 0);
    for (int b = 0; b < n_seq; ++b) {
        if (a.sal_every > 0 && (b < n_seq - 1 || n_seq == 1))
            for (int j = 0; j < a.lens[size_t(b)]; j += a.sal_every) sal_k.push_back(cu_k[size_t(b)] + j);
        cu_sal.push_back(int32_t(sal_k.size()));
    }
}

inline bool run_attention_cols(Backend& be, const OpBackend& ob, const AttnCase& a) {
    const auto           cu_k  = offsets(a.lens);
    const auto           q_seq = query_seqs(cu_k, a.subset);
    std::vector<int32_t> sal_k, cu_sal;
    salient_keys(a, cu_k, sal_k, cu_sal);
    const int64_t nq = int64_t(q_seq.size()), nk = cu_k.back(), ns = int64_t(sal_k.size());
    const int64_t qd = int64_t(a.n_head) * a.head_dim, kvd = int64_t(a.n_kv_head) * a.head_dim;
    const auto    qv = values(size_t(nq * qd), 33), kv = values(size_t(nk * kvd), 34, a.kv),
               vv = values(size_t(nk * kvd), 35, a.kv), dvv = values(size_t(ns * kvd), 36, a.kv, 0.1f);
    const cpu::AttnDims dims{a.n_head, a.n_kv_head, a.head_dim};
    // The rows' statistics as an exact attention over the same q and k leaves them (so the salient weights sum to
    // at most 1, as in a decode); c_old is that attention's context.
    std::vector<float> ctx(size_t(nq * qd)), lse(size_t(nq * a.n_head));
    cpu::ref::attention(cm(qv, nq, qd), q_seq.data(), cm(kv, nk, kvd), cm(vv, nk, kvd), cu_k.data(), dims,
                        mm(ctx, nq, qd), mm(lse, nq, a.n_head));
    Tensor q = put(be, DType::F32, nq, qd, qv), k = put(be, a.kv, nk, kvd, kv), dv = put(be, a.kv, ns, kvd, dvv);
    Tensor c_old = put(be, DType::F32, nq, qd, ctx), l = put(be, DType::F32, nq, a.n_head, lse);
    Tensor c_new = be.alloc(DType::F32, nq, qd);
    const AttentionShape shape{a.n_head, a.n_kv_head, a.head_dim};
    be.attention_cols(q, q_seq, k, dv, sal_k, cu_sal, cu_k, l, c_old, shape, c_new);
    std::vector<float> ref(size_t(nq * qd));
    cpu::ref::attention_cols(cm(qv, nq, qd), q_seq.data(), cm(kv, nk, kvd), cm(dvv, ns, kvd), sal_k.data(),
                             cu_sal.data(), cm(lse, nq, a.n_head), cm(ctx, nq, qd), dims, mm(ref, nq, qd));
    // Weights exp(s - lse) carry the scores' error (as in exact attention) over ns terms of scale 0.1, plus the fp32
    // add of c_old. With nothing salient c_new must equal c_old exactly.
    const std::string name = case_name("attention_cols", ob, attn_name(a));
    const double      tol  = attn_tol(a, ns, 0.1);
    const auto        got  = get(be, c_new);
    bool              ok   = a.sal_every == 0 ? exact(name, got, ctx) : close(name, got, ref, [&](size_t e) {
        return tol + 2.0 * kU32 * std::fabs(double(ref[e])) + 1e-7;
    });
    be.attention_cols(q, q_seq, k, dv, sal_k, cu_sal, cu_k, l, c_old, shape, c_old);  // in place on an F32 c_old
    return exact(name + "_inplace", get(be, c_old), got) && ok;
}

// The incremental form: the rows' context and statistics are those of an exact attention over the OLD keys (the
// salient ones at k_old / v_old); the update must give exact attention over the new keys (k with the salient rows
// replaced, v_new = v_old + dv), and the reference's result, wherever it does not fall back; where it falls back
// (the unchanged keys held under kColsMinRestMass of the mass) c_new = c_old and lse_out is NaN.
inline bool run_attention_cols_incremental(Backend& be, const OpBackend& ob, const AttnCase& a) {
    const auto           cu_k  = offsets(a.lens);
    const auto           q_seq = query_seqs(cu_k, a.subset);
    std::vector<int32_t> sal_k, cu_sal;
    salient_keys(a, cu_k, sal_k, cu_sal);
    const int64_t       nq = int64_t(q_seq.size()), nk = cu_k.back(), ns = int64_t(sal_k.size());
    const int64_t       qd = int64_t(a.n_head) * a.head_dim, kvd = int64_t(a.n_kv_head) * a.head_dim;
    const cpu::AttnDims dims{a.n_head, a.n_kv_head, a.head_dim};
    const auto          qv = values(size_t(nq * qd), 43), k_new = values(size_t(nk * kvd), 44, a.kv),
               v_old_all = values(size_t(nk * kvd), 45, a.kv), k_old_sal = values(size_t(ns * kvd), 46, a.kv),
               dvv = values(size_t(ns * kvd), 47, a.kv, 0.3f);
    // Old keys: the new ones with the salient rows at their old values; v_new = v_old + dv on the salient rows.
    std::vector<float> k_old_all(k_new), v_new_all(v_old_all), v_old_sal(size_t(ns * kvd));
    for (int64_t t = 0; t < ns; ++t)
        for (int64_t c = 0; c < kvd; ++c) {
            const size_t e = size_t(sal_k[size_t(t)] * kvd + c), st = size_t(t * kvd + c);
            k_old_all[e]  = k_old_sal[st];
            v_old_sal[st] = v_old_all[e];
            v_new_all[e]  = v_old_all[e] + dvv[st];
        }
    std::vector<float> ctx(size_t(nq * qd)), lse(size_t(nq * a.n_head)), want(size_t(nq * qd));
    cpu::ref::attention(cm(qv, nq, qd), q_seq.data(), cm(k_old_all, nk, kvd), cm(v_old_all, nk, kvd), cu_k.data(), dims,
                        mm(ctx, nq, qd), mm(lse, nq, a.n_head));
    cpu::ref::attention(cm(qv, nq, qd), q_seq.data(), cm(k_new, nk, kvd), cm(v_new_all, nk, kvd), cu_k.data(), dims,
                        mm(want, nq, qd));
    Tensor q = put(be, DType::F32, nq, qd, qv), k = put(be, a.kv, nk, kvd, k_new), dv = put(be, a.kv, ns, kvd, dvv);
    Tensor ko = put(be, a.kv, ns, kvd, k_old_sal), vo = put(be, a.kv, ns, kvd, v_old_sal);
    Tensor c_old = put(be, DType::F32, nq, qd, ctx), l = put(be, DType::F32, nq, a.n_head, lse);
    Tensor c_new = be.alloc(DType::F32, nq, qd), l_out = be.alloc(DType::F32, nq, a.n_head);
    const AttentionShape shape{a.n_head, a.n_kv_head, a.head_dim};
    be.attention_cols(q, q_seq, k, dv, sal_k, cu_sal, cu_k, l, c_old, shape, c_new, ko, vo, l_out);
    std::vector<float> ref(size_t(nq * qd)), ref_lse(size_t(nq * a.n_head));
    cpu::ref::attention_cols(cm(qv, nq, qd), q_seq.data(), cm(k_new, nk, kvd), cm(dvv, ns, kvd), sal_k.data(),
                             cu_sal.data(), cm(lse, nq, a.n_head), cm(ctx, nq, qd), dims, mm(ref, nq, qd),
                             cm(k_old_sal, ns, kvd), cm(v_old_sal, ns, kvd), mm(ref_lse, nq, a.n_head));
    // Per (row, head): the unchanged keys' share of the old mass, rest; cancellation amplifies rounding by 1 / rest.
    // Each of the 2 ns + nk terms carries the scores' error of attn_tol (values up to 1.3).
    const auto        got = get(be, c_new), got_lse = get(be, l_out);
    const std::string name      = case_name("attention_cols_incremental", ob, attn_name(a));
    bool              ok        = true;
    int               fallbacks = 0;
    for (int64_t i = 0; i < nq; ++i)
        for (int h = 0; h < a.n_head; ++h) {
            const size_t he = size_t(i * a.n_head + h);
            const bool   fb = std::isnan(ref_lse[he]);
            if (fb != std::isnan(got_lse[he])) {  // the 1e-3 threshold itself may round either way only at ~1e-3
                UNSCOPED_INFO(name << ": row " << i << " head " << h << " fallback differs");
                ok = false;
                continue;
            }
            fallbacks += fb;
            const int     b       = q_seq[size_t(i)];
            const float*  qi      = qv.data() + i * qd + int64_t(h) * a.head_dim;
            const int64_t g       = h / (a.n_head / a.n_kv_head);
            double        old_sal = 0;
            for (int32_t t = cu_sal[size_t(b)]; t < cu_sal[size_t(b) + 1]; ++t) {
                double d = 0;
                for (int c = 0; c < a.head_dim; ++c)
                    d += double(qi[c]) * double(k_old_sal[size_t(t * kvd + g * a.head_dim + c)]);
                old_sal += std::exp(d / std::sqrt(double(a.head_dim)) - double(lse[he]));
            }
            const double rest = std::max(1.0 - old_sal, 1e-3);
            const double tol  = attn_tol(a, nk + 2 * ns, 1.3) / rest + 1e-6;
            for (int c = 0; c < a.head_dim; ++c) {
                const size_t e    = size_t(i * qd + int64_t(h) * a.head_dim + c);
                const double exp_ = fb ? double(ctx[e]) : double(want[e]);
                if (std::fabs(double(got[e]) - exp_) > tol || std::fabs(double(got[e]) - double(ref[e])) > tol) {
                    UNSCOPED_INFO(name << ": row " << i << " head " << h << " col " << c << " got " << got[e]
                                       << " exact " << exp_ << " ref " << ref[e] << " tol " << tol);
                    ok = false;
                    break;
                }
            }
        }
    if (a.sal_every == 1 && a.lens.size() == 1 && a.lens[0] > 0) ok = ok && fallbacks == nq * a.n_head;
    return ok;
}

inline bool run_attention_approx(Backend& be, const OpBackend& ob, const AttnCase& a) {
    const auto           cu_k  = offsets(a.lens);
    const auto           q_seq = query_seqs(cu_k, a.subset);
    const int            n_seq = int(a.lens.size());
    std::vector<int32_t> sal_k, cu_sal{0};
    for (int b = 0; b < n_seq; ++b) {
        // The last of several sequences keeps an empty set whatever sal_every is (empty per-sequence sets are legal).
        if (a.sal_every > 0 && (b < n_seq - 1 || n_seq == 1))
            for (int j = 0; j < a.lens[size_t(b)]; j += a.sal_every) sal_k.push_back(cu_k[size_t(b)] + j);
        cu_sal.push_back(int32_t(sal_k.size()));
    }
    const int64_t nq = int64_t(q_seq.size()), nk = cu_k.back(), ns = int64_t(sal_k.size());
    const int64_t qd = int64_t(a.n_head) * a.head_dim, kvd = int64_t(a.n_kv_head) * a.head_dim;
    const auto    qv = values(size_t(nq * qd), 23), kv = values(size_t(nk * kvd), 24, a.kv),
               dvv = values(size_t(ns * kvd), 25, a.kv, 0.1f), cv = values(size_t(nq * qd), 26, a.kv);
    Tensor q = put(be, DType::F32, nq, qd, qv), k = put(be, a.kv, nk, kvd, kv), dv = put(be, a.kv, ns, kvd, dvv);
    Tensor c_old = put(be, a.kv, nq, qd, cv), c_new = be.alloc(DType::F32, nq, qd);
    const AttentionShape shape{a.n_head, a.n_kv_head, a.head_dim};
    be.attention_approx(q, q_seq, k, dv, sal_k, cu_sal, cu_k, c_old, shape, c_new);
    std::vector<float> ref(size_t(nq * qd));
    cpu::ref::attention_approx(cm(qv, nq, qd), q_seq.data(), cm(kv, nk, kvd), cm(dvv, ns, kvd), sal_k.data(),
                               cu_sal.data(), cu_k.data(), cm(cv, nq, qd),
                               cpu::AttnDims{a.n_head, a.n_kv_head, a.head_dim}, mm(ref, nq, qd));
    // The weighted sum of dv (scale 0.1) as for exact attention, plus the fp32 add of c_old (one rounding of |c_new|).
    // With nothing salient c_new must equal c_old exactly.
    const std::string name = case_name("attention_approx", ob, attn_name(a));
    const double      tol  = attn_tol(a, nk + ns, 0.1);
    const auto        got  = get(be, c_new);
    bool              ok   = a.sal_every == 0 ? exact(name, got, cv) : close(name, got, ref, [&](size_t e) {
        return tol + 2.0 * kU32 * std::fabs(double(ref[e])) + 1e-7;
    });
    if (a.kv == DType::F32) {  // in place: c_new aliases an F32 c_old, the same values
        be.attention_approx(q, q_seq, k, dv, sal_k, cu_sal, cu_k, c_old, shape, c_old);
        ok = exact(name + "_inplace", get(be, c_old), got) && ok;
    }
    return ok;
}

using Needs = std::vector<std::pair<OpKind, DType>>;

inline auto elementwise_needs(OpKind k) {
    return [k](const ElementwiseCase& c) { return Needs{{k, c.a}, {k, c.b}, {k, c.y}}; };
}

}  // namespace dyllm::ops_test

// ---- the table: one TEST_CASE per op --------------------------------------------------------------------------------
using namespace dyllm;
using namespace dyllm::ops_test;

TEST_CASE("backend ops: embed", "[backend_ops]") {
    run_table<EmbedCase>(
        "embed", embed_cases(),
        [](const EmbedCase& c) {
            return Needs{{OpKind::Embed, c.dt}};
        },
        run_embed);
}

TEST_CASE("backend ops: matmul", "[backend_ops]") {
    run_table<MatMulCase>(
        "matmul", matmul_cases(),
        [](const MatMulCase& c) {
            return Needs{{OpKind::MatMul, c.dt}, {OpKind::MatMul, DType::F32}};
        },
        run_matmul);
}

TEST_CASE("backend ops: matmul, quantized weights", "[backend_ops]") {
    run_table<MatMulCase>(
        "matmul quant", quant_matmul_cases(),
        [](const MatMulCase& c) {
            return Needs{{OpKind::MatMul, c.dt}, {OpKind::MatMul, DType::F32}};
        },
        run_quant_matmul, true);
}

TEST_CASE("backend ops: embed, quantized table", "[backend_ops]") {
    run_table<EmbedCase>(
        "embed quant", quant_embed_cases(),
        [](const EmbedCase& c) {
            return Needs{{OpKind::Embed, c.dt}};
        },
        run_quant_embed, true);
}

TEST_CASE("backend ops: rms_norm", "[backend_ops]") {
    run_table<RmsNormCase>(
        "rms_norm", rms_norm_cases(),
        [](const RmsNormCase& c) {
            return Needs{{OpKind::RmsNorm, c.dt}};
        },
        run_rms_norm);
}

TEST_CASE("backend ops: rope", "[backend_ops]") {
    run_table<RopeCase>(
        "rope", rope_cases(),
        [](const RopeCase& c) {
            return Needs{{OpKind::Rope, c.dt}};
        },
        run_rope);
}

TEST_CASE("backend ops: add and sub", "[backend_ops]") {
    run_table<ElementwiseCase>(
        "add", elementwise_cases(), elementwise_needs(OpKind::Add),
        [](Backend& be, const OpBackend& ob, const ElementwiseCase& c) { return run_binary(be, ob, c, false); });
    run_table<ElementwiseCase>(
        "sub", elementwise_cases(), elementwise_needs(OpKind::Sub),
        [](Backend& be, const OpBackend& ob, const ElementwiseCase& c) { return run_binary(be, ob, c, true); });
}

TEST_CASE("backend ops: copy", "[backend_ops]") {
    run_table<ElementwiseCase>("copy", elementwise_cases(), elementwise_needs(OpKind::Copy), run_copy);
}

TEST_CASE("backend ops: silu_mul", "[backend_ops]") {
    run_table<SiluMulCase>(
        "silu_mul", silu_mul_cases(),
        [](const SiluMulCase& c) {
            return Needs{{OpKind::SiluMul, c.dt}};
        },
        run_silu_mul);
}

TEST_CASE("backend ops: gather_rows and scatter_rows", "[backend_ops]") {
    run_table<RowsCase>(
        "gather_rows", rows_cases(),
        [](const RowsCase& c) {
            return Needs{{OpKind::GatherRows, c.src}, {OpKind::GatherRows, c.dst}};
        },
        run_gather);
    run_table<RowsCase>(
        "scatter_rows", rows_cases(),
        [](const RowsCase& c) {
            return Needs{{OpKind::ScatterRows, c.src}, {OpKind::ScatterRows, c.dst}};
        },
        run_scatter);
}

TEST_CASE("backend ops: add_rows", "[backend_ops]") {
    run_table<RowsCase>(
        "add_rows", add_rows_cases(),
        [](const RowsCase& c) {
            return Needs{{OpKind::AddRows, c.src}, {OpKind::Add, DType::F32}};
        },
        run_add_rows);
}

TEST_CASE("backend ops: cosine_rows", "[backend_ops]") {
    run_table<CosineCase>(
        "cosine_rows", cosine_cases(),
        [](const CosineCase& c) {
            return Needs{{OpKind::Cosine, c.a}, {OpKind::Cosine, c.b}};
        },
        run_cosine);
}

TEST_CASE("backend ops: score_logits", "[backend_ops]") {
    run_table<ScoreCase>(
        "score_logits", score_cases(),
        [](const ScoreCase& c) {
            return Needs{{OpKind::ScoreLogits, c.dt}};
        },
        run_score);
}

TEST_CASE("backend ops: attention", "[backend_ops]") {
    run_table<AttnCase>(
        "attention", attention_cases(),
        [](const AttnCase& c) {
            return Needs{{OpKind::Attention, c.kv}};
        },
        run_attention);
}

TEST_CASE("backend ops: attention_cols", "[backend_ops]") {
    run_table<AttnCase>(
        "attention_cols", attention_approx_cases(),
        [](const AttnCase& c) {
            return Needs{{OpKind::AttentionCols, c.kv}};
        },
        run_attention_cols);
}

TEST_CASE("backend ops: attention_cols, incremental", "[backend_ops]") {
    run_table<AttnCase>(
        "attention_cols+", attention_approx_cases(),
        [](const AttnCase& c) {
            return Needs{{OpKind::AttentionCols, c.kv}};
        },
        run_attention_cols_incremental);
}

TEST_CASE("backend ops: attention_approx", "[backend_ops]") {
    run_table<AttnCase>(
        "attention_approx", attention_approx_cases(),
        [](const AttnCase& c) {
            return Needs{{OpKind::AttentionApprox, c.kv}};
        },
        run_attention_approx);
}
