// CpuBackend (engine/backend_cpu.cpp) beyond the op table of test_backend_ops.cpp: identity, memory helpers, the
// backend factory, a strided output view, and the shared argument checks of engine/backend_checks.cpp rejecting bad
// shapes, dtypes, indices, offsets and salient-key orders (each call aborts through DYLLM_ASSERT in a forked child).
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <functional>
#include <set>
#include <thread>

#include "engine/backend.h"
#include "engine/backend_cpu.h"
#include "engine/backend_cuda.h"
#include "engine/errors.h"
#include "kernels/cpu/quant_amx.h"
#include "kernels/cpu/quant_matmul.h"
#include "kernels/cpu/ref/matmul.h"
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
cpu::CMatF cm(const std::vector<float>& v, int64_t rows, int64_t cols) {
    return cpu::CMatF{v.data(), rows, cols, cols};
}
cpu::MatF mm(std::vector<float>& v, int64_t rows, int64_t cols) {
    return cpu::MatF{v.data(), rows, cols, cols};
}

std::unique_ptr<Backend> cpu_backend(int threads = 2) {
    return make_backend(BackendKind::Cpu, threads);
}

// Runs `call` in a forked child with stderr captured and reports whether it aborted (DYLLM_ASSERT) and what it
// printed. A check that does not fire lets the op run (exit 0, or a hang in the child's absent thread pool that the
// 20 s alarm ends with SIGALRM): either way not an abort, so the test fails.
struct Outcome {
    bool        aborted = false;
    std::string err;
};
Outcome run_in_child(const std::function<void()>& call) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        std::signal(SIGABRT, SIG_DFL);  // Catch2's fatal-signal handler would report the abort as a failed test
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        alarm(20);
        call();
        _exit(0);
    }
    close(fds[1]);
    Outcome o;
    char    buf[512];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) o.err.append(buf, size_t(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    o.aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
    return o;
}

// The call aborts with a DYLLM_ASSERT message containing `what`.
void check_rejects(const std::function<void()>& call, const std::string& what) {
    const Outcome o = run_in_child(call);
    INFO("expected an abort mentioning '" << what << "'; stderr: " << o.err);
    CHECK(o.aborted);
    CHECK(o.err.find("DYLLM_ASSERT") != std::string::npos);
    CHECK(o.err.find(what) != std::string::npos);
}

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
    CHECK(be->host_threads() == 2);  // the pool's size (dyllm bench compares its probe with one thread's)
    CHECK(make_backend(BackendKind::Cpu, 1)->host_threads() == 1);

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

TEST_CASE("CpuBackend: release_weight forgets a packed weight, so reused memory is read afresh", "[backend]") {
    // The packed copy is found by the stored view's address: a weight freed without release_weight and a new one
    // stored at the same address would multiply by the old values (how `dyllm bench`'s GEMM probe uses the API).
    auto                     be = cpu_backend(1);
    const int64_t            n = 5, m = 48, k = 40;
    std::vector<float>       x = random_floats(size_t(n * k), 1), w = random_floats(size_t(m * k), 2);
    const std::vector<float> w2 = random_floats(size_t(m * k), 3);
    std::vector<float>       y(size_t(n * m)), ref(size_t(n * m));
    const TensorView         wv = be->prepare_weight(view(w, m, k), "probe");
    be->matmul(view(x, n, k), wv, TensorView{}, view(y, n, m));
    cpu::ref::matmul(cm(x, n, k), cpu::ConstMat{w.data(), cpu::ElemType::F32, m, k, k}, cpu::ConstMat{}, mm(ref, n, m));
    // Products of 40 fp32 terms of |value| <= 1, fp32 accumulation in another order: |error| well under 1e-4.
    CHECK(all_close("packed", y, ref, 1e-4, 0));
    be->release_weight(wv);
    w = w2;  // same storage, new values: what a freed and reallocated weight would look like
    be->matmul(view(x, n, k), wv, TensorView{}, view(y, n, m));
    cpu::ref::matmul(cm(x, n, k), cpu::ConstMat{w2.data(), cpu::ElemType::F32, m, k, k}, cpu::ConstMat{},
                     mm(ref, n, m));
    CHECK(all_close("released", y, ref, 1e-4, 0));
    be->release_weight(view(x, n, k));  // never prepared: ignored
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
    CHECK(make_backend(BackendKind::Cpu, 0)
              ->description()
              .find(std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " thread") !=
          std::string::npos);
    CHECK(make_backend(BackendKind::Cpu, 0)->host_threads() == int(std::max(1u, std::thread::hardware_concurrency())));
}

TEST_CASE("set_cpu_quant_isa forces what the CPU runs and refuses the rest by name", "[backend]") {
    using cpu::QuantIsa;
    for (const QuantIsa isa : {QuantIsa::Avx512, QuantIsa::AvxVnni, QuantIsa::Avx2, QuantIsa::Baseline}) {
        const std::string name = cpu::quant_isa_name(isa);
        INFO(name);
        if (cpu::quant_isa_available(isa)) {
            set_cpu_quant_isa(name);
            CHECK(cpu::quant_isa() == isa);
            CHECK_FALSE(cpu::quant_amx_allowed());  // a named instruction set below "amx" runs without it
            CHECK(cpu_quant_isa_name() == name);
            CHECK(make_backend(BackendKind::Cpu, 1)->description().find("quantized " + name + ")") !=
                  std::string::npos);
        } else {
            CHECK_THROWS_WITH(set_cpu_quant_isa(name), Catch::Contains("this CPU does not run it"));
        }
    }
    if (cpu::quant_amx_available()) {
        set_cpu_quant_isa("amx");
        CHECK(cpu::quant_isa() == QuantIsa::Avx512);
        CHECK(cpu::quant_amx_allowed());
        CHECK(cpu_quant_isa_name() == "avx512+amx");
    } else {
        CHECK_THROWS_WITH(set_cpu_quant_isa("amx"), Catch::Contains("this CPU does not run it"));
    }
    CHECK_THROWS_AS(set_cpu_quant_isa("avx1024"), InputError);
    set_cpu_quant_isa("auto");
    CHECK(cpu::quant_amx_allowed());
    CHECK(cpu::quant_isa() != QuantIsa::Auto);
    CHECK(cpu_quant_isa_name().rfind(cpu::quant_isa_name(cpu::quant_isa()), 0) == 0);
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

TEST_CASE("cpu backend matmul on a column slice of a wider output", "[backend][cpu]") {
    // y is the right half of a [n, 2m] buffer (a fused [q|k] output, say): row stride 2m, the left half untouched.
    auto               be = cpu_backend(2);
    const int64_t      n = 6, k = 20, m = 9;
    const auto         w = make_stored(cpu::ElemType::BF16, m, k, 8);
    auto               x = random_floats(size_t(n * k), 9);
    std::vector<float> buf(size_t(n * 2 * m), 5.0f), yr(size_t(n * m));
    TensorView         y = TensorView::matrix(buf.data() + m, DType::F32, Device::Cpu, n, m);
    y.nb[1]              = int64_t(2 * m * 4);
    y.nb[2] = y.nb[3] = y.nb[1] * n;
    be->matmul(view(x, n, k), view(w), TensorView{}, y);
    cpu::ref::matmul(cm(x, n, k), w.mat(), cpu::ConstMat{}, mm(yr, n, m));
    for (int64_t i = 0; i < n; ++i) {
        CHECK(all_close("backend_matmul_slice", buf.data() + i * 2 * m + m, yr.data() + i * m, size_t(m),
                        4.0 * kU32 * k, 1e-6));
        for (int64_t c = 0; c < m; ++c) CHECK(buf[size_t(i * 2 * m + c)] == 5.0f);
    }
}

TEST_CASE("shared op checks reject bad shapes, dtypes and views on the cpu backend", "[backend][cpu][checks]") {
    auto                  be = cpu_backend(1);
    std::vector<float>    x(6), w(20), y(8), big(64);
    std::vector<uint16_t> h(64);
    // matmul: x [2, 3] does not fit w [4, 5].
    check_rejects([&] { be->matmul(view(x, 2, 3), view(w, 4, 5), TensorView{}, view(y, 2, 4)); },
                  "matmul: x [2, 3] F32, w [4, 5] F32, y [2, 4] F32 do not fit y = x w^T");
    // An activation in a 16-bit dtype.
    check_rejects(
        [&] {
            be->matmul(TensorView::matrix(h.data(), DType::BF16, Device::Cpu, 2, 5), view(w, 4, 5), TensorView{},
                       view(y, 2, 4));
        },
        "matmul: x must be F32, got BF16");
    // A dtype supports() refuses for the op (I32 weights).
    check_rejects(
        [&] {
            be->matmul(view(x, 1, 5), TensorView::matrix(big.data(), DType::I32, Device::Cpu, 4, 5), TensorView{},
                       view(y, 1, 4));
        },
        "matmul: w [4, 5] I32: dtype I32 is not supported by the cpu backend");
    // A view claiming device memory.
    check_rejects(
        [&] { be->add(view(x, 2, 3), TensorView::matrix(w.data(), DType::F32, Device::Cuda, 2, 3), view(y, 2, 3)); },
        "add: b [2, 3] F32 is not in cpu memory");
    // Columns that are not contiguous.
    check_rejects(
        [&] {
            TensorView a = view(big, 4, 4);
            a.nb[0]      = 8;
            be->copy(a, view(w, 4, 4));
        },
        "copy: src columns are not contiguous");
    // Output aliasing the input.
    check_rejects([&] { be->matmul(view(big, 2, 4), view(w, 4, 4), TensorView{}, view(big, 2, 4)); },
                  "matmul: y aliases x");
    check_rejects(
        [&] {
            be->rope(view(x, 2, 3), std::vector<int32_t>{0, 1}, 1, 3, 10000.0f);
        },
        "rope: x [2, 3] F32 is not n_head 1 x head_dim 3 (even)");
    check_rejects([&] { be->rms_norm(view(x, 2, 3), view(w, 1, 4), 1e-5f, view(y, 2, 3)); },
                  "rms_norm: weight [1, 4] F32 for rows of 3");
    check_rejects([&] { be->silu_mul(view(x, 2, 3), view(w, 3, 2), view(y, 2, 3)); },
                  "silu_mul: gate [2, 3] F32 and up [3, 2] F32 differ in shape");
    std::vector<float> cos(1);
    check_rejects([&] { be->cosine_rows(view(x, 2, 3), view(w, 2, 3), cos); }, "cosine_rows: 1 outputs for 2 rows");
}

TEST_CASE("shared op checks reject bad indices, offsets and salient-key orders on the cpu backend",
          "[backend][cpu][checks]") {
    auto be = cpu_backend(1);
    // Indices out of range.
    std::vector<float> table(15 * 4), out(2 * 4);
    check_rejects(
        [&] {
            be->embed(view(table, 15, 4), std::vector<int32_t>{3, 15}, view(out, 2, 4));
        },
        "embed: id 15 at 1 outside [0, 15)");
    check_rejects(
        [&] {
            be->gather_rows(view(table, 15, 4), std::vector<int32_t>{-1, 2}, view(out, 2, 4));
        },
        "gather_rows: index -1 at 0 outside [0, 15)");
    check_rejects(
        [&] {
            be->scatter_rows(view(out, 2, 4), std::vector<int32_t>{0, 15}, view(table, 15, 4));
        },
        "scatter_rows: index 15 at 1 outside [0, 15)");
    std::vector<int32_t> tok(3);
    std::vector<float>   sc(3);
    check_rejects(
        [&] { be->score_logits(view(table, 3, 20), ScoreKind::Confidence, std::vector<int32_t>{20}, tok, sc); },
        "score_logits: banned id 20 at 0 outside [0, 20)");

    // Attention: 2 sequences of 3 and 4 keys, head_dim 2, one head.
    const AttentionShape       shape{1, 1, 2};
    std::vector<float>         q(3 * 2), k(7 * 2), v(7 * 2), o(3 * 2), c(3 * 2), dv(3 * 2);
    const std::vector<int32_t> cu_k = {0, 3, 7}, q_seq = {0, 1, 1};
    auto                       attn = [&](std::vector<int32_t> qs, std::vector<int32_t> cu) {
        be->attention(view(q, 3, 2), qs, view(k, 7, 2), view(v, 7, 2), cu, shape, view(o, 3, 2));
    };
    check_rejects([&] { attn({0, 2, 1}, cu_k); }, "attention: q_seq sequence 2 at 1 outside [0, 2)");
    check_rejects([&] { attn({0, 1}, cu_k); }, "attention: q_seq has 2 entries for 3 query rows");
    check_rejects([&] { attn(q_seq, {0, 5, 3}); }, "attention: cu_k decreases at 2");
    check_rejects([&] { attn(q_seq, {0, 3, 8}); }, "attention: cu_k ends at 8 past the 7 rows");
    check_rejects(
        [&] {
            be->attention(view(q, 3, 2), q_seq, view(k, 7, 2), view(v, 7, 2), cu_k, AttentionShape{2, 3, 1},
                          view(o, 3, 2));
        },
        "attention: bad shape n_head 2, n_kv_head 3, head_dim 1");
    check_rejects(
        [&] { be->attention(view(q, 3, 2), q_seq, view(k, 7, 2), view(v, 7, 2), cu_k, shape, view(q, 3, 2)); },
        "attention: out aliases an input");

    auto approx = [&](std::vector<int32_t> sal, std::vector<int32_t> cu_sal, std::vector<int32_t> qs) {
        be->attention_approx(view(q, 3, 2), qs, view(k, 7, 2), view(dv, int64_t(sal.size()), 2), sal, cu_sal, cu_k,
                             view(c, 3, 2), shape, view(o, 3, 2));
    };
    approx({0, 2, 5}, {0, 2, 3}, q_seq);  // valid: returns normally in this process
    // The checks a backend's copy of the op could skip: q_seq ranges and the salient-key order.
    check_rejects(
        [&] {
            approx({0, 2, 5}, {0, 2, 3}, {0, 1, 2});
        },
        "attention_approx: q_seq sequence 2 at 2 outside [0, 2)");
    check_rejects(
        [&] {
            approx({2, 0, 5}, {0, 2, 3}, q_seq);
        },
        "attention_approx: salient key rows of sequence 0 are not strictly ascending");
    check_rejects(
        [&] {
            approx({0, 2, 2}, {0, 1, 3}, q_seq);
        },
        "attention_approx: salient key row 2 outside sequence 1's keys [3, 7)");
    check_rejects(
        [&] {
            approx({4, 5}, {0, 2, 2}, q_seq);
        },
        "attention_approx: salient key row 4 outside sequence 0's keys [0, 3)");
    check_rejects([&] { approx({0, 2, 5}, {1, 2, 3}, q_seq); }, "attention_approx: cu_sal[0] must be 0, got 1");
    check_rejects([&] { approx({0, 2, 5}, {0, 3}, q_seq); }, "attention_approx: cu_sal has 2 offsets, cu_k 3");
    check_rejects(
        [&] {
            // c_new overlapping c_old by one row.
            std::vector<float> buf(4 * 2);
            be->attention_approx(view(q, 3, 2), q_seq, view(k, 7, 2), view(dv, 0, 2), {}, std::vector<int32_t>{0, 0, 0},
                                 cu_k, view(buf, 3, 2), shape,
                                 TensorView::matrix(buf.data() + 2, DType::F32, Device::Cpu, 3, 2));
        },
        "attention_approx: c_new partially overlaps c_old");

    // The fused form (DyLLM's exact rows in the approximation's pass): the same checks, plus v and the exact rows.
    REQUIRE(be->fuses_exact_rows());
    auto fused = [&](std::vector<int32_t> exact, int64_t v_rows) {
        be->attention_approx_exact(view(q, 3, 2), q_seq, view(k, 7, 2), view(v, v_rows, 2), view(dv, 3, 2),
                                   std::vector<int32_t>{0, 2, 5}, std::vector<int32_t>{0, 2, 3}, cu_k, exact,
                                   view(c, 3, 2), shape, view(o, 3, 2));
    };
    fused({0, 2}, 7);  // valid
    fused({}, 7);      // no exact row: the plain approximation
    check_rejects([&] { fused({2, 0}, 7); }, "attention_approx_exact: exact rows are not strictly ascending at 1");
    check_rejects([&] { fused({1, 3}, 7); }, "attention_approx_exact: exact row 3 at 1 outside [0, 3)");
    check_rejects([&] { fused({1}, 6); }, "attention_approx_exact: k [7, 2]");
}
