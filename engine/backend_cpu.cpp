// CpuBackend: the Backend interface on host memory. Each do_<op> receives arguments the public Backend op has already
// checked (engine/backend_checks.cpp), turns the views into kernels/cpu matrix descriptors and calls the optimised
// kernel. Cache operands stored as F16/BF16 are widened to fp32 scratch first (the CPU's own caches are F32, so that
// path is only for foreign views).
#include "engine/backend_cpu.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/errors.h"
#include "engine/io/mapped_file.h"
#include "engine/quant_type.h"
#include "kernels/cpu/add_rows.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_approx.h"
#include "kernels/cpu/attention_cols.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/cosine.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/embed.h"
#include "kernels/cpu/huge_page_buffer.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/packed_gemm.h"
#include "kernels/cpu/quant_amx.h"
#include "kernels/cpu/quant_matmul.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/rows.h"
#include "kernels/cpu/score_logits.h"
#include "kernels/cpu/silu_mul.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm {

namespace {

using cpu::CMatF;
using cpu::ConstMat;
using cpu::ElemType;
using cpu::MatF;

// A GEMM's FMAs per unit of kMinSplitWork (thread_pool.h: streaming element-operations): single-thread sgemm does
// about 50 GFMA/s here against about 4 G elements/s for a streaming op (tests/bench/bench_thread_pool.cpp).
constexpr int64_t kGemmWorkPerOp = 12;

// The views below were validated by the public Backend ops (engine/backend_checks.cpp): host memory, float storage,
// contiguous columns, rows at a fixed stride. These only turn them into kernels/cpu matrix descriptors.

std::string shp(const TensorView& v) {
    // Appends instead of operator+ chains: g++ 12 reports a false -Wrestrict on "[" + std::string (GCC bug 105329).
    std::string s("[");
    s.append(std::to_string(v.rows())).append(", ").append(std::to_string(v.cols())).append("] ");
    return s.append(dtype_name(v.dtype));
}

ElemType elem_of(DType t) {
    switch (t) {
        case DType::F32:
            return ElemType::F32;
        case DType::F16:
            return ElemType::F16;
        case DType::BF16:
            return ElemType::BF16;
        default:
            break;
    }
    DYLLM_ASSERT(false, std::string("cpu backend: no float storage type for ") + dtype_name(t));
}

// A quantized weight or table (ne[0] = in, ne[1] = out, nb[1] = row bytes), kept in its stored blocks.
cpu::QuantMat qmat(const TensorView& v) {
    return cpu::QuantMat{v.data, quant_of(v.dtype), v.rows(), v.cols(), v.nb[1]};
}

int64_t ld(const TensorView& v) {
    return v.nb[1] / int64_t(dtype_size(v.dtype));
}

CMatF cmat(const TensorView& v) {
    return CMatF{v.ptr<const float>(), v.rows(), v.cols(), ld(v)};
}
MatF mat(const TensorView& v) {
    return MatF{v.ptr<float>(), v.rows(), v.cols(), ld(v)};
}
ConstMat any_mat(const TensorView& v) {
    return ConstMat{v.data, elem_of(v.dtype), v.rows(), v.cols(), ld(v)};
}

// An F32 view of any float operand: the view itself when it is F32, else a widened copy.
struct F32In {
    std::vector<float> buf;
    CMatF              m;
};
F32In f32_in(const TensorView& v) {
    F32In r;
    if (v.dtype == DType::F32) {
        r.m = cmat(v);
        return r;
    }
    const ConstMat src = any_mat(v);
    r.buf.resize(size_t(src.rows * src.cols));
    for (int64_t i = 0; i < src.rows; ++i)
        cpu::widen_row(src.row_ptr(i), src.type, r.buf.data() + i * src.cols, src.cols);
    r.m = CMatF{r.buf.data(), src.rows, src.cols, src.cols};
    return r;
}

// Writes an F32 result into any float destination (direct when it is F32).
struct F32Out {
    std::vector<float> buf;
    MatF               m;
    TensorView         dst;
    void               finish() {
                      if (buf.empty()) return;
        for (int64_t i = 0; i < m.rows; ++i)
            cpu::narrow_row(m.row(i), static_cast<char*>(dst.data) + i * dst.nb[1], elem_of(dst.dtype), m.cols);
    }
};
F32Out f32_out(const TensorView& v) {
    F32Out r;
    r.dst = v;
    if (v.dtype == DType::F32) {
        r.m = mat(v);
        return r;
    }
    r.buf.resize(size_t(std::max<int64_t>(1, v.rows() * v.cols())));
    r.m = MatF{r.buf.data(), v.rows(), v.cols(), v.cols()};
    return r;
}

class CpuBackend final : public Backend {
public:
    explicit CpuBackend(int n_threads) : n_threads_(n_threads), pool_(n_threads), gemm_(n_threads) {
        cpu::blas_set_threads(1);  // every BLAS call runs on the thread that makes it; the pool splits (do_matmul)
        const std::string cfg = cpu::blas_config();  // "OpenBLAS 0.3.21 DYNAMIC_ARCH ..."
        const size_t      sp  = cfg.find(' ', cfg.find(' ') + 1);
        blas_name_            = cfg.substr(0, sp) + " " + cpu::blas_core();  // the kernel set goes with every figure
        if (!cpu::PackedGemm::provider().empty()) blas_name_ += ", " + cpu::PackedGemm::provider();
    }

    const char* name() const override { return "cpu"; }
    Device      device() const override { return Device::Cpu; }
    std::string description() const override {
        return "cpu (" + std::to_string(n_threads_) + (n_threads_ == 1 ? " thread, " : " threads, ") + blas_name_ +
               ", quantized " + cpu_quant_isa_name() + ")";
    }
    DType cache_dtype() const override { return DType::F32; }
    int   host_threads() const override { return n_threads_; }

    // Quantized storage is taken by the two ops that read weights: matmul (kernels/cpu/quant_matmul.h) and embed.
    bool supports(OpKind op, DType dtype) const override {
        if (is_quantized(dtype)) return op == OpKind::MatMul || op == OpKind::Embed;
        return op_supports_dtype(op, dtype);
    }

    // ---- memory -----------------------------------------------------------------------------------------------
    Tensor alloc(DType dtype, int64_t rows, int64_t cols) override {
        DYLLM_ASSERT(rows >= 0 && cols >= 0,
                     "alloc: negative shape [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
        const size_t bytes = size_t(rows) * size_t(cols) * dtype_size(dtype);
        const size_t alloc = std::max<size_t>(64, (bytes + 63) / 64 * 64);  // 64-byte lines, never a null pointer
        // Aligned operator new (not aligned_alloc): tensor memory then goes through the C++ allocation functions,
        // which a test can replace to prove that the step loop allocates none (tests/unit/test_step_allocations.cpp).
        // From 4 MiB on (logits, caches, workspace chunks): 2 MiB-aligned and advised huge pages before the memset
        // touches them (kernels/cpu/huge_page_buffer.h: a first touch is the expensive part of a fresh allocation).
        const bool huge  = alloc >= 2 * cpu::HugePageBuffer::kHugePage;
        const auto align = std::align_val_t(huge ? cpu::HugePageBuffer::kHugePage : 64);
        void* p          = ::operator new(alloc, align, std::nothrow);
        if (!p) throw BackendError("cpu backend: out of memory allocating " + std::to_string(bytes) + " bytes");
        if (huge) cpu::advise_huge_pages(p, alloc);
        std::memset(p, 0, alloc);
        return Tensor(TensorView::matrix(p, dtype, Device::Cpu, rows, cols),
                      std::shared_ptr<void>(p, [align](void* q) { ::operator delete(q, align); }));
    }
    void upload(const TensorView& dst, const void* host_src) override {
        DYLLM_ASSERT(dst.device == Device::Cpu && dst.contiguous(),
                     "upload: destination " + shp(dst) + " is not a contiguous host tensor");
        if (dst.bytes()) std::memcpy(dst.data, host_src, dst.bytes());
    }
    void download(const TensorView& src, void* host_dst) override {
        DYLLM_ASSERT(src.device == Device::Cpu && src.contiguous(),
                     "download: source " + shp(src) + " is not a contiguous host tensor");
        if (src.bytes()) std::memcpy(host_dst, src.data, src.bytes());
    }
    void       synchronize() override {}
    TensorView prepare_weight(const TensorView& host_weight, const std::string& name) override {
        DYLLM_ASSERT(host_weight.device == Device::Cpu, "prepare_weight: " + name + " is not in host memory");
        DYLLM_ASSERT(is_float(host_weight.dtype) || is_quantized(host_weight.dtype),
                     "prepare_weight: " + name + " has dtype " + dtype_name(host_weight.dtype) +
                         ", expected F32/F16/BF16 or a quantized type");
        // Quantized weights stay in their stored blocks (do_matmul decodes panels of them per product).
        if (is_quantized(host_weight.dtype)) return host_weight;
        // The view stays the stored (memory-mapped) one: embed reads its rows, and any op may widen it. A matrix the
        // GEMM provider takes is also packed once into the provider's layout; do_matmul uses that copy for this view.
        // Not the embedding table (only read by rows; a tied LM head is prepared again as "lm_head").
        const ElemType et = elem_of(host_weight.dtype);
        if (name == "tok_embd" || host_weight.rows() < 2 || host_weight.cols() == 0 || !cpu::PackedGemm::supports(et))
            return host_weight;
        std::string err;
        auto        packed = gemm_.pack(any_mat(host_weight), pool_, &err);
        if (!packed)
            throw BackendError("cpu backend: cannot pack weight " + name + " " + shp(host_weight) + ": " + err);
        packed_[host_weight.data] =
            Packed{host_weight.dtype, host_weight.rows(), host_weight.cols(), ld(host_weight), std::move(packed)};
        // Once packed, the stored copy is only read again by embed (a few rows): the resident set holds the packed copy
        // alone (kernels/README.md "GEMM provider": memory ~1x the checkpoint).
        release_pages(host_weight.data, host_weight.bytes());
        return host_weight;
    }

    void release_weight(const TensorView& host_weight) override { packed_.erase(host_weight.data); }

protected:
    // ---- ops (arguments already checked by the public Backend ops) ---------------------------------------------
    void do_embed(const TensorView& table, std::span<const int32_t> ids, const TensorView& out) override {
        if (is_quantized(table.dtype)) return cpu::quant_gather_rows(qmat(table), ids.data(), mat(out));
        cpu::embed(any_mat(table), ids.data(), mat(out));
    }

    void do_matmul(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& y) override {
        ConstMat bm{};
        if (!bias.empty()) {
            bm      = any_mat(bias);
            bm.rows = 1;
            bm.cols = w.rows();
        }
        if (is_quantized(w.dtype)) return cpu::quant_matmul(cmat(x), qmat(w), bm, mat(y), pool_, compute_f32_);
        const ConstMat wm = any_mat(w);
        // Weights packed at prepare_weight (oneDNN, kernels/cpu/packed_gemm.h) slice themselves over the pool.
        if (const cpu::PackedWeight* pw = packed(w); pw && !(compute_f32_ && pw->type() != ElemType::F32))
            return gemm_.matmul(cmat(x), *pw, bm, mat(y), pool_);
        // The engine's pool splits the product by columns of y (rows of W), one single-threaded BLAS call per slice:
        // OpenBLAS's own threads would spin (sched_yield) after every call, beside the pool's workers, on the same
        // cores (engine/README.md §t). Each slice packs its own W rows once; x is small next to W on every shape here.
        const int64_t m     = wm.rows;
        const int     parts = pool_.split_threads(x.rows() * x.cols() * m / kGemmWorkPerOp);
        if (parts <= 1) return cpu::matmul(cmat(x), wm, bm, mat(y), pool_);
        const int64_t step     = ((m + parts - 1) / parts + 63) / 64 * 64;  // whole 64-column panels per slice
        const int64_t n_slices = (m + step - 1) / step;
        const MatF    ym       = mat(y);
        pool_.parallel_for(n_slices, [&](int64_t sl, int) {
            const int64_t m0 = sl * step, mb = std::min(step, m - m0);
            ConstMat      ws = wm;
            ws.data          = wm.row_ptr(m0);
            ws.rows          = mb;
            ConstMat bs      = bm;
            if (bs.data) {
                bs.data = static_cast<const char*>(bm.data) + m0 * int64_t(cpu::elem_size(bm.type));
                bs.cols = mb;
            }
            cpu::matmul(cmat(x), ws, bs, MatF{ym.data + m0, ym.rows, mb, ym.ld}, pool_);
        });
    }

    void do_rms_norm(const TensorView& x, const TensorView& w, float eps, const TensorView& y) override {
        ConstMat wm = any_mat(w);
        wm.rows     = 1;
        wm.cols     = x.cols();
        cpu::rms_norm(cmat(x), wm, eps, mat(y), pool_);
    }

    void do_rope(const TensorView& x, std::span<const int32_t> positions, int n_head, int head_dim,
                 float theta) override {
        cpu::rope(mat(x), positions.data(), n_head, head_dim, theta, pool_);
    }

    void do_add(const TensorView& a, const TensorView& b, const TensorView& y) override { binary(a, b, y, false); }
    void do_sub(const TensorView& a, const TensorView& b, const TensorView& y) override { binary(a, b, y, true); }

    void do_silu_mul(const TensorView& gate, const TensorView& up, const TensorView& y) override {
        cpu::silu_mul(cmat(gate), cmat(up), mat(y), pool_);
    }

    void do_copy(const TensorView& src, const TensorView& dst) override {
        const ConstMat s = any_mat(src);
        const ConstMat d = any_mat(dst);
        for (int64_t i = 0; i < s.rows; ++i)
            cpu::convert_row(s.row_ptr(i), s.type, const_cast<void*>(d.row_ptr(i)), d.type, s.cols);
    }

    void do_attention(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k, const TensorView& v,
                      std::span<const int32_t> cu_k, AttentionShape shape, const TensorView& out,
                      const TensorView& lse) override {
        const F32In km = f32_in(k), vm = f32_in(v);
        cpu::attention(cmat(q), q_seq.data(), km.m, vm.m, cu_k.data(), int(cu_k.size()) - 1,
                       cpu::AttnDims{shape.n_head, shape.n_kv_head, shape.head_dim}, mat(out), pool_, 0,
                       lse.data ? mat(lse) : cpu::MatF{});
    }

    void do_attention_cols(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k,
                           const TensorView& dv, std::span<const int32_t> sal_k, std::span<const int32_t> cu_sal,
                           const TensorView& lse, const TensorView& c_old, AttentionShape shape,
                           const TensorView& c_new, const TensorView& k_old, const TensorView& v_old,
                           const TensorView& lse_out) override {
        const F32In km = f32_in(k), dvm = f32_in(dv), co = f32_in(c_old);
        const F32In ko = k_old.data ? f32_in(k_old) : F32In{}, vo = v_old.data ? f32_in(v_old) : F32In{};
        cpu::attention_cols(cmat(q), q_seq.data(), km.m, dvm.m, sal_k.data(), cu_sal.data(), cmat(lse), co.m,
                            cpu::AttnDims{shape.n_head, shape.n_kv_head, shape.head_dim}, mat(c_new), pool_, ko.m, vo.m,
                            lse_out.data ? mat(lse_out) : cpu::MatF{});
    }

    void do_attention_approx(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k,
                             const TensorView& dv, std::span<const int32_t> sal_k, std::span<const int32_t> cu_sal,
                             std::span<const int32_t> cu_k, const TensorView& c_old, AttentionShape shape,
                             const TensorView& c_new) override {
        const F32In km = f32_in(k), dvm = f32_in(dv), co = f32_in(c_old);
        cpu::attention_approx(cmat(q), q_seq.data(), km.m, dvm.m, sal_k.data(), cu_sal.data(), cu_k.data(),
                              int(cu_k.size()) - 1, co.m, cpu::AttnDims{shape.n_head, shape.n_kv_head, shape.head_dim},
                              mat(c_new), pool_);
    }

    bool fuses_exact_rows() const override { return true; }

    // The packed copies of 16-bit weights multiply in bf16; under f32 the stored view is widened per panel instead
    // (matmul.h: fp32 sgemm on fp32 x). F32 packed weights are fp32 products already; quantized weights are decoded
    // to fp32 in both modes.
    bool set_compute_f32(bool on) override {
        compute_f32_ = on;
        return true;
    }

    void do_attention_approx_exact(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k,
                                   const TensorView& v, const TensorView& dv, std::span<const int32_t> sal_k,
                                   std::span<const int32_t> cu_sal, std::span<const int32_t> cu_k,
                                   std::span<const int32_t> exact, const TensorView& c_old, AttentionShape shape,
                                   const TensorView& c_new) override {
        const F32In km = f32_in(k), vm = f32_in(v), dvm = f32_in(dv), co = f32_in(c_old);
        cpu::attention_approx(cmat(q), q_seq.data(), km.m, dvm.m, sal_k.data(), cu_sal.data(), cu_k.data(),
                              int(cu_k.size()) - 1, co.m, cpu::AttnDims{shape.n_head, shape.n_kv_head, shape.head_dim},
                              mat(c_new), pool_, 0, vm.m, exact.data(), int64_t(exact.size()));
    }

    void do_gather_rows(const TensorView& src, std::span<const int32_t> idx, const TensorView& dst) override {
        cpu::gather_rows(any_mat(src), idx.data(), int64_t(idx.size()), dst.data, elem_of(dst.dtype), ld(dst));
    }

    void do_scatter_rows(const TensorView& src, std::span<const int32_t> idx, const TensorView& dst) override {
        cpu::scatter_rows(any_mat(src), idx.data(), int64_t(idx.size()), dst.data, elem_of(dst.dtype), ld(dst));
    }

    void do_add_rows(const TensorView& src, std::span<const int32_t> idx, const TensorView& y) override {
        cpu::add_rows(any_mat(src), idx.data(), int64_t(idx.size()), y.ptr<float>(), ld(y));
    }

    void do_cosine_rows(const TensorView& a, const TensorView& b, std::span<float> cos_out) override {
        const F32In am = f32_in(a), bm = f32_in(b);
        cpu::cosine_rows(am.m, bm.m, cos_out.data());
    }

    void do_score_logits(const TensorView& logits, ScoreKind kind, std::span<const int32_t> banned,
                         std::span<int32_t> tokens_out, std::span<float> scores_out) override {
        cpu::score_logits(cmat(logits),
                          kind == ScoreKind::Confidence ? cpu::ScoreRule::Confidence : cpu::ScoreRule::NegEntropy,
                          banned.data(), int64_t(banned.size()), tokens_out.data(), scores_out.data(), pool_);
    }

private:
    // A weight packed by prepare_weight, found again by its view (same storage, type, shape and stride).
    struct Packed {
        DType                                    dtype;
        int64_t                                  rows, cols, ld;
        std::shared_ptr<const cpu::PackedWeight> w;
    };
    const cpu::PackedWeight* packed(const TensorView& w) const {
        const auto it = packed_.find(w.data);
        if (it == packed_.end()) return nullptr;
        const Packed& p = it->second;
        return p.dtype == w.dtype && p.rows == w.rows() && p.cols == w.cols() && p.ld == ld(w) ? p.w.get() : nullptr;
    }
    void binary(const TensorView& a, const TensorView& b, const TensorView& y, bool subtract) {
        if (a.dtype == DType::F32 && b.dtype == DType::F32 && y.dtype == DType::F32) {
            subtract ? cpu::sub(cmat(a), cmat(b), mat(y), pool_) : cpu::add(cmat(a), cmat(b), mat(y), pool_);
            return;
        }
        // Mixed storage (e.g. a BF16 cache): widen the inputs, compute in fp32, round once into y.
        const F32In am = f32_in(a), bm = f32_in(b);
        F32Out      ym = f32_out(y);
        subtract ? cpu::sub(am.m, bm.m, ym.m) : cpu::add(am.m, bm.m, ym.m);
        ym.finish();
    }

    int                                     n_threads_;
    cpu::ThreadPool                         pool_;
    cpu::PackedGemm                         gemm_;
    std::string                             blas_name_;
    std::unordered_map<const void*, Packed> packed_;               // by the stored weight's address
    bool                                    compute_f32_ = false;  // --compute f32 (set_compute_f32)
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int n_threads) {
    if (n_threads <= 0) n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
    return std::make_unique<CpuBackend>(n_threads);
}

void set_cpu_quant_isa(std::string_view name) {
    using cpu::QuantIsa;
    constexpr QuantIsa kForced[] = {QuantIsa::Avx512, QuantIsa::AvxVnni, QuantIsa::Avx2, QuantIsa::Baseline};
    // "amx" is AVX-512 with the AMX paths; "avx512" the same without them (an AVX-512 CPU without AMX).
    const bool              amx = name == "amx";
    std::optional<QuantIsa> isa;
    if (amx || name == "auto") isa = amx ? QuantIsa::Avx512 : QuantIsa::Auto;
    for (const QuantIsa i : kForced)
        if (name == cpu::quant_isa_name(i)) isa = i;
    if (!isa)
        throw InputError("--quant-isa must be auto, amx, avx512, avx-vnni, avx2 or baseline (got '" +
                         std::string(name) + "')");
    if (!cpu::quant_isa_available(*isa) || (amx && !cpu::quant_amx_available())) {
        std::string runs = cpu::quant_amx_available() ? "amx" : "";
        for (const QuantIsa o : kForced)
            if (cpu::quant_isa_available(o)) runs += std::string(runs.empty() ? "" : ", ") + cpu::quant_isa_name(o);
        throw InputError("--quant-isa " + std::string(name) + ": this CPU does not run it (it runs " + runs + ")");
    }
    cpu::quant_force_isa(*isa);
    cpu::quant_allow_amx(*isa == QuantIsa::Auto || amx);
}

std::string cpu_quant_isa_name() {
    const bool amx = cpu::quant_auto_may_use_amx() && cpu::quant_amx_available();
    return std::string(cpu::quant_isa_name(cpu::quant_isa())) + (amx ? "+amx" : "");
}

}  // namespace dyllm
