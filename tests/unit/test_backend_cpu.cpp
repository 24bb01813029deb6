// CpuBackend (engine/backend_cpu.cpp) against the kernels/cpu references through the Backend interface: every op,
// F32/F16/BF16 weights and 16-bit cache operands, zero-row calls, memory helpers, and the backend factory.
#include <catch2/catch.hpp>

#include <cstring>
#include <set>
#include <thread>

#include "engine/backend.h"
#include "engine/backend_cpu.h"
#include "engine/backend_cuda.h"
#include "engine/errors.h"
#include "kernels/cpu/ref/attention.h"
#include "kernels/cpu/ref/attention_approx.h"
#include "kernels/cpu/ref/cosine.h"
#include "kernels/cpu/ref/elementwise.h"
#include "kernels/cpu/ref/embed.h"
#include "kernels/cpu/ref/matmul.h"
#include "kernels/cpu/ref/rms_norm.h"
#include "kernels/cpu/ref/rope.h"
#include "kernels/cpu/ref/rows.h"
#include "kernels/cpu/ref/score_logits.h"
#include "kernels/cpu/ref/silu_mul.h"
#include "unit/test_kernels_util.h"

using namespace dyllm;
using dyllm::test::all_close;
using dyllm::test::kU32;
using dyllm::test::make_stored;
using dyllm::test::random_floats;

namespace {

DType dtype_of(cpu::ElemType t) {
    return t == cpu::ElemType::F32 ? DType::F32 : t == cpu::ElemType::F16 ? DType::F16 : DType::BF16;
}

TensorView view(std::vector<float>& v, int64_t rows, int64_t cols) {
    return TensorView::matrix(v.data(), DType::F32, Device::Cpu, rows, cols);
}
TensorView view(const test::StoredMat& m) {
    return TensorView::matrix(const_cast<void*>(m.data()), dtype_of(m.type), Device::Cpu, m.rows, m.cols);
}
cpu::CMatF cm(const std::vector<float>& v, int64_t rows, int64_t cols) { return cpu::CMatF{v.data(), rows, cols, cols}; }
cpu::MatF  mm(std::vector<float>& v, int64_t rows, int64_t cols) { return cpu::MatF{v.data(), rows, cols, cols}; }

// A cache operand stored as `t` (F32 or a 16-bit type) and the fp32 values it holds.
test::StoredMat cache_of(cpu::ElemType t, int64_t rows, int64_t cols, uint32_t seed, float scale = 1.0f) {
    return make_stored(t, rows, cols, seed, scale);
}

std::unique_ptr<Backend> cpu_backend(int threads = 2) { return make_backend(BackendKind::Cpu, threads); }

}  // namespace

TEST_CASE("cpu backend identity, supports, alloc, upload and download", "[backend][cpu]") {
    auto be = cpu_backend(2);
    CHECK(std::string(be->name()) == "cpu");
    CHECK(be->device() == Device::Cpu);
    CHECK(be->cache_dtype() == DType::F32);
    CHECK(be->description().rfind("cpu (2 threads, OpenBLAS", 0) == 0);
    CHECK(be->supports(OpKind::MatMul, DType::BF16));
    CHECK(be->supports(OpKind::MatMul, DType::F16));
    CHECK_FALSE(be->supports(OpKind::MatMul, DType::I32));
    CHECK(be->supports(OpKind::Attention, DType::F32));
    CHECK_FALSE(be->supports(OpKind::Rope, DType::BF16));
    CHECK(make_backend(BackendKind::Cpu, 1)->description().rfind("cpu (1 thread, OpenBLAS", 0) == 0);

    Tensor t = be->alloc(DType::F32, 3, 5);
    REQUIRE(t.rows() == 3);
    REQUIRE(t.cols() == 5);
    for (int i = 0; i < 15; ++i) REQUIRE(t.ptr<float>()[i] == 0.0f);  // zeroed
    const auto src = random_floats(15, 1);
    be->upload(t.view(), src.data());
    std::vector<float> back(15);
    be->download(t.view(), back.data());
    CHECK(back == src);
    Tensor e = be->alloc(DType::BF16, 0, 7);  // zero rows is a valid tensor
    CHECK(e.valid());
    CHECK(e.rows() == 0);
    // prepare_weight keeps the host view (no copy, stored dtype).
    const auto w  = make_stored(cpu::ElemType::BF16, 4, 6, 2);
    TensorView pw = be->prepare_weight(view(w), "blk.0.w");
    CHECK(pw.data == w.data());
    CHECK(pw.dtype == DType::BF16);
}

TEST_CASE("make_backend: cpu, cuda without CUDA, auto fallback reason", "[backend]") {
    std::string reason = "stale";
    auto        c      = make_backend(BackendKind::Cpu, 1, &reason);
    CHECK(std::string(c->name()) == "cpu");
    CHECK(reason.empty());
    std::string why;
    const int   n_dev = cuda_device_count(&why);
    if (n_dev == 0) {
        CHECK_FALSE(why.empty());
        CHECK_THROWS_AS(make_backend(BackendKind::Cuda), BackendError);
        try {
            make_backend(BackendKind::Cuda);
        } catch (const BackendError& e) {
            CHECK(std::string(e.what()).find(why) != std::string::npos);
        }
        auto a = make_backend(BackendKind::Auto, 1, &reason);
        CHECK(std::string(a->name()) == "cpu");
        CHECK(reason == "no CUDA device (" + why + "): using the CPU backend");
#ifndef DYLLM_HAVE_CUDA
        CHECK(why == "CUDA backend not compiled in (DYLLM_CUDA=OFF)");
#endif
    }
    CHECK(make_backend(BackendKind::Cpu, 0)->description().find(
              std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " thread") != std::string::npos);
}

TEST_CASE("op and backend kind names are distinct", "[backend]") {
    std::set<std::string> names;
    for (int k = 0; k < int(OpKind::Count); ++k) names.insert(op_kind_name(OpKind(k)));
    CHECK(names.size() == size_t(OpKind::Count));
    CHECK(names.count("?") == 0);
    CHECK(std::string(backend_kind_name(BackendKind::Cpu)) == "cpu");
    CHECK(std::string(backend_kind_name(BackendKind::Cuda)) == "cuda");
    CHECK(std::string(backend_kind_name(BackendKind::Auto)) == "auto");
}

TEST_CASE("cpu backend matmul, embed, rms_norm vs reference for every weight dtype", "[backend][cpu]") {
    const cpu::ElemType wt = GENERATE(cpu::ElemType::F32, cpu::ElemType::F16, cpu::ElemType::BF16);
    const auto [n, k, m]   = GENERATE(table<int64_t, int64_t, int64_t>({{0, 8, 5}, {1, 1, 1}, {7, 33, 300}, {40, 256, 129}}));
    CAPTURE(test::elem_name(wt), n, k, m);
    auto       be   = cpu_backend(2);
    const auto w    = make_stored(wt, m, k, 3);
    const auto bias = make_stored(wt, 1, m, 4);
    auto       x    = random_floats(size_t(n * k), 5);
    std::vector<float> y(size_t(n * m)), yr(y.size());
    be->matmul(view(x, n, k), view(w), view(bias), view(y, n, m));
    cpu::ref::matmul(cm(x, n, k), w.mat(), bias.mat(), mm(yr, n, m));
    CHECK(all_close("backend_matmul", y, yr, 4.0 * kU32 * double(k + 1), 1e-6));  // as in test_kernels_ops
    be->matmul(view(x, n, k), view(w), TensorView{}, view(y, n, m));                // no bias
    cpu::ref::matmul(cm(x, n, k), w.mat(), cpu::ConstMat{}, mm(yr, n, m));
    CHECK(all_close("backend_matmul_nobias", y, yr, 4.0 * kU32 * double(k + 1), 1e-6));

    const auto                 table = make_stored(wt, 50, k, 6);
    std::vector<int32_t>       ids;
    for (int64_t i = 0; i < n; ++i) ids.push_back(int32_t((i * 13) % 50));
    std::vector<float> e(size_t(n * k)), er(e.size());
    be->embed(view(table), ids, view(e, n, k));
    cpu::ref::embed(table.mat(), ids.data(), mm(er, n, k));
    CHECK(e == er);

    const auto nw = make_stored(wt, 1, k, 7);
    std::vector<float> r(size_t(n * k)), rr(r.size());
    be->rms_norm(view(x, n, k), view(nw), 1e-6f, view(r, n, k));
    cpu::ref::rms_norm(cm(x, n, k), nw.mat(), 1e-6f, mm(rr, n, k));
    CHECK(all_close("backend_rms_norm", r, rr, 1e-6, (4.0 * std::sqrt(double(k)) + 8.0) * kU32));
    be->rms_norm(view(x, n, k), view(nw), 1e-6f, view(x, n, k));  // in place
    CHECK(all_close("backend_rms_norm_inplace", x, rr, 1e-6, (4.0 * std::sqrt(double(k)) + 8.0) * kU32));
}

TEST_CASE("cpu backend matmul on a column slice of a wider output", "[backend][cpu]") {
    // y is the right half of a [n, 2m] buffer (a fused [q|k] output, say): row stride 2m, the left half untouched.
    auto          be = cpu_backend(2);
    const int64_t n = 6, k = 20, m = 9;
    const auto    w = make_stored(cpu::ElemType::BF16, m, k, 8);
    auto          x = random_floats(size_t(n * k), 9);
    std::vector<float> buf(size_t(n * 2 * m), 5.0f), yr(size_t(n * m));
    TensorView         y = TensorView::matrix(buf.data() + m, DType::F32, Device::Cpu, n, m);
    y.nb[1]              = int64_t(2 * m * 4);
    y.nb[2] = y.nb[3] = y.nb[1] * n;
    be->matmul(view(x, n, k), view(w), TensorView{}, y);
    cpu::ref::matmul(cm(x, n, k), w.mat(), cpu::ConstMat{}, mm(yr, n, m));
    for (int64_t i = 0; i < n; ++i) {
        CHECK(all_close("backend_matmul_slice", buf.data() + i * 2 * m + m, yr.data() + i * m, size_t(m), 4.0 * kU32 * k, 1e-6));
        for (int64_t c = 0; c < m; ++c) CHECK(buf[size_t(i * 2 * m + c)] == 5.0f);
    }
}

TEST_CASE("cpu backend rope, add, sub, silu_mul, copy vs reference", "[backend][cpu]") {
    const int64_t n = GENERATE(int64_t(0), int64_t(1), int64_t(11));
    CAPTURE(n);
    auto                 be = cpu_backend(2);
    const int            H = 3, D = 10;
    auto                 x = random_floats(size_t(n * H * D), 10), xr = x;
    std::vector<int32_t> pos;
    for (int64_t i = 0; i < n; ++i) pos.push_back(int32_t(i * 7 + 3));
    be->rope(view(x, n, H * D), pos, H, D, 10000.0f);
    cpu::ref::rope(mm(xr, n, H * D), pos.data(), H, D, 10000.0f);
    CHECK(all_close("backend_rope", x, xr, 4.0 * kU32, 4.0 * kU32));  // as in test_kernels_ops

    const int64_t w = 37;
    auto          a = random_floats(size_t(n * w), 11), b = random_floats(size_t(n * w), 12);
    std::vector<float> y(a.size()), yr(a.size());
    be->add(view(a, n, w), view(b, n, w), view(y, n, w));
    cpu::ref::add(cm(a, n, w), cm(b, n, w), mm(yr, n, w));
    CHECK(y == yr);
    be->sub(view(a, n, w), view(b, n, w), view(y, n, w));
    cpu::ref::sub(cm(a, n, w), cm(b, n, w), mm(yr, n, w));
    CHECK(y == yr);
    be->silu_mul(view(a, n, w), view(b, n, w), view(y, n, w));
    cpu::ref::silu_mul(cm(a, n, w), cm(b, n, w), mm(yr, n, w));
    CHECK(all_close("backend_silu_mul", y, yr, 1e-7, 8.0 * kU32));

    // sub into a BF16 cache-typed output: one rounding of the fp32 difference.
    std::vector<uint16_t> yb(size_t(n * w));
    be->sub(view(a, n, w), view(b, n, w), TensorView::matrix(yb.data(), DType::BF16, Device::Cpu, n, w));
    for (size_t i = 0; i < yb.size(); ++i) REQUIRE(yb[i] == f32_to_bf16(a[i] - b[i]));
    // copy F32 -> BF16 -> F32 equals rounding to bf16.
    std::vector<float> back(a.size());
    be->copy(view(a, n, w), TensorView::matrix(yb.data(), DType::BF16, Device::Cpu, n, w));
    be->copy(TensorView::matrix(yb.data(), DType::BF16, Device::Cpu, n, w), view(back, n, w));
    for (size_t i = 0; i < a.size(); ++i) REQUIRE(back[i] == round_to_bf16(a[i]));
}

TEST_CASE("cpu backend gather, scatter, cosine, score_logits vs reference", "[backend][cpu]") {
    const cpu::ElemType ct = GENERATE(cpu::ElemType::F32, cpu::ElemType::BF16);
    CAPTURE(test::elem_name(ct));
    auto                       be  = cpu_backend(2);
    const int64_t              w   = 24;
    const auto                 src = cache_of(ct, 15, w, 20);
    const std::vector<int32_t> idx = {14, 2, 2, 9};
    for (const std::vector<int32_t>& ix : {idx, std::vector<int32_t>{}}) {
        std::vector<float> g(ix.size() * size_t(w)), gr(g.size());
        be->gather_rows(view(src), ix, view(g, int64_t(ix.size()), w));
        cpu::ref::gather_rows(src.mat(), ix.data(), int64_t(ix.size()), gr.data(), cpu::ElemType::F32, w);
        CHECK(g == gr);
    }
    const std::vector<int32_t> sidx = {3, 0, 14};
    auto                       s    = random_floats(3 * size_t(w), 21);
    auto                       dst  = cache_of(ct, 15, w, 22), dst_ref = dst;
    be->scatter_rows(view(s, 3, w), sidx, view(dst));
    cpu::ref::scatter_rows(cpu::ConstMat{s.data(), cpu::ElemType::F32, 3, w, w}, sidx.data(), 3,
                           const_cast<void*>(dst_ref.data()), ct, w);
    CHECK(std::memcmp(dst.data(), dst_ref.data(), size_t(15 * w) * cpu::elem_size(ct)) == 0);
    be->scatter_rows(view(s, 0, w), {}, view(dst));  // zero rows: nothing happens

    const auto         a = cache_of(ct, 15, w, 23), b = cache_of(ct, 15, w, 24);
    std::vector<float> c(15), cr(15);
    be->cosine_rows(view(a), view(b), c);
    cpu::ref::cosine_rows(cm(a.exact, 15, w), cm(b.exact, 15, w), cr.data());
    CHECK(all_close("backend_cosine", c, cr, 8.0 * std::sqrt(double(w)) * kU32, 0.0));  // as in test_kernels_ops

    const int64_t        V = 1000, n = 5;
    auto                 logits = random_floats(size_t(n * V), 25, -4.0f, 4.0f);
    std::vector<int32_t> banned = {7, 999}, tok(static_cast<size_t>(n)), tokr(static_cast<size_t>(n));
    std::vector<float>   sc(static_cast<size_t>(n)), scr(static_cast<size_t>(n));
    for (ScoreKind kind : {ScoreKind::Confidence, ScoreKind::NegEntropy}) {
        be->score_logits(view(logits, n, V), kind, banned, tok, sc);
        cpu::ref::score_logits(cm(logits, n, V),
                               kind == ScoreKind::Confidence ? cpu::ScoreRule::Confidence : cpu::ScoreRule::NegEntropy,
                               banned.data(), int64_t(banned.size()), tokr.data(), scr.data());
        CHECK(tok == tokr);
        CHECK(all_close("backend_score", sc, scr, 1e-7, 16.0 * kU32));
    }
    be->score_logits(view(logits, 0, V), ScoreKind::Confidence, banned, {}, {});  // zero rows
}

TEST_CASE("cpu backend attention and attention_approx vs reference, F32 and BF16 caches", "[backend][cpu]") {
    const cpu::ElemType ct = GENERATE(cpu::ElemType::F32, cpu::ElemType::BF16);
    const auto [Hq, Hkv]   = GENERATE(table<int, int>({{4, 4}, {8, 2}, {7, 1}}));
    const int sal_every    = GENERATE(0, 2);
    CAPTURE(test::elem_name(ct), Hq, Hkv, sal_every);
    auto                       be = cpu_backend(2);
    const int                  D  = 16;
    const std::vector<int32_t> cu_k  = {0, 9, 9, 30};           // sequence 1 has no keys
    const std::vector<int32_t> q_seq = {2, 0, 2, 2, 0, 2, 0};   // and no queries; rows interleaved
    const int64_t              nq = int64_t(q_seq.size()), nk = 30, qd = int64_t(Hq) * D, kvd = int64_t(Hkv) * D;
    std::vector<int32_t>       sal_k, cu_sal = {0};
    for (int b = 0; b < 3; ++b) {
        if (sal_every)
            for (int j = cu_k[size_t(b)]; j < cu_k[size_t(b) + 1]; j += sal_every) sal_k.push_back(j);
        cu_sal.push_back(int32_t(sal_k.size()));
    }
    const int64_t ns = int64_t(sal_k.size());
    auto          q  = random_floats(size_t(nq * qd), 30, -3.0f, 3.0f);
    const auto    k = cache_of(ct, nk, kvd, 31), v = cache_of(ct, nk, kvd, 32), dv = cache_of(ct, ns, kvd, 33);
    const auto    c_old = cache_of(ct, nq, qd, 34);
    const AttentionShape shape{Hq, Hkv, D};
    const cpu::AttnDims  dims{Hq, Hkv, D};
    std::vector<float>   out(size_t(nq * qd)), outr(out.size());
    be->attention(view(q, nq, qd), q_seq, view(k), view(v), cu_k, shape, view(out, nq, qd));
    cpu::ref::attention(cm(q, nq, qd), q_seq.data(), cm(k.exact, nk, kvd), cm(v.exact, nk, kvd), cu_k.data(), dims,
                        mm(outr, nq, qd));
    // Same budget as test_kernels_attention: 16 (D + nk) u.
    CHECK(all_close("backend_attention", out, outr, 16.0 * kU32 * (D + nk), 1e-5));

    std::vector<float> cn(size_t(nq * qd)), cnr(cn.size());
    be->attention_approx(view(q, nq, qd), q_seq, view(k), view(dv), sal_k, cu_sal, cu_k, view(c_old), shape,
                         view(cn, nq, qd));
    cpu::ref::attention_approx(cm(q, nq, qd), q_seq.data(), cm(k.exact, nk, kvd), cm(dv.exact, ns, kvd), sal_k.data(),
                               cu_sal.data(), cu_k.data(), cm(c_old.exact, nq, qd), dims, mm(cnr, nq, qd));
    CHECK(all_close("backend_attention_approx", cn, cnr, 16.0 * kU32 * (D + nk), 1e-5));
    // In place (c_new aliases an F32 c_old).
    if (ct == cpu::ElemType::F32) {
        std::vector<float> c = c_old.exact;
        be->attention_approx(view(q, nq, qd), q_seq, view(k), view(dv), sal_k, cu_sal, cu_k, view(c, nq, qd), shape,
                             view(c, nq, qd));
        CHECK(c == cn);
    }
    // Zero query rows.
    be->attention(view(q, 0, qd), {}, view(k), view(v), cu_k, shape, view(out, 0, qd));
    be->attention_approx(view(q, 0, qd), {}, view(k), view(dv), sal_k, cu_sal, cu_k, view(cn, 0, qd), shape,
                         view(cn, 0, qd));
}
