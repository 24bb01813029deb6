// CpuBackend: the Backend interface on host memory. Each op validates shapes and dtypes (DYLLM_ASSERT: a mismatch is
// a bug in the caller), turns the views into kernels/cpu matrix descriptors and calls the optimised kernel. Cache
// operands stored as F16/BF16 are widened to fp32 scratch first (the CPU's own caches are F32, so that path is only
// for foreign views).
#include "engine/backend_cpu.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "engine/errors.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_approx.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/cosine.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/embed.h"
#include "kernels/cpu/matmul.h"
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

std::string shp(const TensorView& v) {
    return "[" + std::to_string(v.rows()) + ", " + std::to_string(v.cols()) + "] " + dtype_name(v.dtype);
}

ElemType elem_of(DType t) {
    switch (t) {
        case DType::F32: return ElemType::F32;
        case DType::F16: return ElemType::F16;
        case DType::BF16: return ElemType::BF16;
        case DType::I32: break;
    }
    DYLLM_ASSERT(false, std::string("cpu backend: no float storage type for ") + dtype_name(t));
}

// Row stride in elements of a 2-D (or row-contiguous higher-dim) host view; asserts the layout the kernels need:
// contiguous columns, rows at a fixed stride.
int64_t row_stride(const TensorView& v, const char* op, const char* what) {
    const int64_t es = int64_t(dtype_size(v.dtype));
    DYLLM_ASSERT(v.device == Device::Cpu, std::string(op) + ": " + what + " is not in host memory");
    DYLLM_ASSERT(v.numel() == 0 || v.data != nullptr, std::string(op) + ": " + what + " has no data");
    DYLLM_ASSERT(v.nb[0] == es, std::string(op) + ": " + what + " columns are not contiguous");
    DYLLM_ASSERT(v.nb[1] % es == 0 && v.nb[1] >= es * v.ne[0],
                 std::string(op) + ": " + what + " row stride " + std::to_string(v.nb[1]) + " is invalid");
    DYLLM_ASSERT((v.ne[2] == 1 || v.nb[2] == v.nb[1] * v.ne[1]) && (v.ne[3] == 1 || v.nb[3] == v.nb[2] * v.ne[2]),
                 std::string(op) + ": " + what + " is not a 2-D row-strided matrix");
    return v.nb[1] / es;
}

CMatF cmat(const TensorView& v, const char* op, const char* what) {
    DYLLM_ASSERT(v.dtype == DType::F32, std::string(op) + ": " + what + " must be F32, got " + dtype_name(v.dtype));
    return CMatF{v.ptr<const float>(), v.rows(), v.cols(), row_stride(v, op, what)};
}

MatF mat(const TensorView& v, const char* op, const char* what) {
    DYLLM_ASSERT(v.dtype == DType::F32, std::string(op) + ": " + what + " must be F32, got " + dtype_name(v.dtype));
    return MatF{v.ptr<float>(), v.rows(), v.cols(), row_stride(v, op, what)};
}

ConstMat any_mat(const TensorView& v, const char* op, const char* what) {
    DYLLM_ASSERT(is_float(v.dtype), std::string(op) + ": " + what + " must be F32/F16/BF16, got " + dtype_name(v.dtype));
    return ConstMat{v.data, elem_of(v.dtype), v.rows(), v.cols(), row_stride(v, op, what)};
}

// An F32 view of any float operand: the view itself when it is F32, else a widened copy.
struct F32In {
    std::vector<float> buf;
    CMatF              m;
};
F32In f32_in(const TensorView& v, const char* op, const char* what) {
    F32In r;
    if (v.dtype == DType::F32) {
        r.m = cmat(v, op, what);
        return r;
    }
    const ConstMat src = any_mat(v, op, what);
    r.buf.resize(size_t(src.rows * src.cols));
    for (int64_t i = 0; i < src.rows; ++i) cpu::widen_row(src.row_ptr(i), src.type, r.buf.data() + i * src.cols, src.cols);
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
F32Out f32_out(const TensorView& v, const char* op, const char* what) {
    F32Out r;
    r.dst = v;
    if (v.dtype == DType::F32) {
        r.m = mat(v, op, what);
        return r;
    }
    any_mat(v, op, what);  // validates the layout
    r.buf.resize(size_t(std::max<int64_t>(1, v.rows() * v.cols())));
    r.m = MatF{r.buf.data(), v.rows(), v.cols(), v.cols()};
    return r;
}

void check_same_shape(const TensorView& a, const TensorView& b, const char* op, const char* an, const char* bn) {
    DYLLM_ASSERT(a.rows() == b.rows() && a.cols() == b.cols(),
                 std::string(op) + ": " + an + " " + shp(a) + " and " + bn + " " + shp(b) + " differ in shape");
}

bool overlaps(const TensorView& a, const TensorView& b) {
    if (a.numel() == 0 || b.numel() == 0) return false;
    const char* a0 = static_cast<const char*>(a.data);
    const char* b0 = static_cast<const char*>(b.data);
    const char* a1 = a0 + (a.rows() - 1) * a.nb[1] + a.cols() * a.nb[0];
    const char* b1 = b0 + (b.rows() - 1) * b.nb[1] + b.cols() * b.nb[0];
    return a0 < b1 && b0 < a1;
}

// Validates cu (size n_seq + 1, non-decreasing, cu[0] >= 0, cu[n_seq] <= limit).
void check_offsets(std::span<const int32_t> cu, int64_t limit, const char* op, const char* what) {
    DYLLM_ASSERT(!cu.empty(), std::string(op) + ": " + what + " is empty (needs n_seq + 1 offsets)");
    DYLLM_ASSERT(cu[0] >= 0, std::string(op) + ": " + what + "[0] = " + std::to_string(cu[0]) + " < 0");
    for (size_t b = 1; b < cu.size(); ++b)
        DYLLM_ASSERT(cu[b] >= cu[b - 1], std::string(op) + ": " + what + " decreases at " + std::to_string(b));
    DYLLM_ASSERT(cu.back() <= limit, std::string(op) + ": " + what + " ends at " + std::to_string(cu.back()) +
                                         " past the " + std::to_string(limit) + " rows");
}

void check_attention_shape(AttentionShape s, const char* op) {
    DYLLM_ASSERT(s.n_head > 0 && s.n_kv_head > 0 && s.head_dim > 0 && s.n_head % s.n_kv_head == 0,
                 std::string(op) + ": bad shape n_head " + std::to_string(s.n_head) + ", n_kv_head " +
                     std::to_string(s.n_kv_head) + ", head_dim " + std::to_string(s.head_dim));
}

void check_q_seq(std::span<const int32_t> q_seq, int64_t nq, int n_seq, const char* op) {
    DYLLM_ASSERT(int64_t(q_seq.size()) == nq, std::string(op) + ": q_seq has " + std::to_string(q_seq.size()) +
                                                  " entries for " + std::to_string(nq) + " query rows");
    for (size_t i = 0; i < q_seq.size(); ++i)
        DYLLM_ASSERT(q_seq[i] >= 0 && q_seq[i] < n_seq, std::string(op) + ": q_seq[" + std::to_string(i) + "] = " +
                                                           std::to_string(q_seq[i]) + " outside [0, " +
                                                           std::to_string(n_seq) + ")");
}

class CpuBackend final : public Backend {
public:
    explicit CpuBackend(int n_threads) : n_threads_(n_threads), pool_(n_threads) {
        cpu::blas_set_threads(n_threads);
        const std::string cfg = cpu::blas_config();  // "OpenBLAS 0.3.21 DYNAMIC_ARCH ..."
        const size_t      sp  = cfg.find(' ', cfg.find(' ') + 1);
        blas_name_            = cfg.substr(0, sp);
    }

    const char* name() const override { return "cpu"; }
    Device      device() const override { return Device::Cpu; }
    std::string description() const override {
        return "cpu (" + std::to_string(n_threads_) + (n_threads_ == 1 ? " thread, " : " threads, ") + blas_name_ + ")";
    }
    DType cache_dtype() const override { return DType::F32; }

    bool supports(OpKind op, DType dtype) const override { return op_supports_dtype(op, dtype); }

    // ---- memory -----------------------------------------------------------------------------------------------
    Tensor alloc(DType dtype, int64_t rows, int64_t cols) override {
        DYLLM_ASSERT(rows >= 0 && cols >= 0, "alloc: negative shape [" + std::to_string(rows) + ", " +
                                                  std::to_string(cols) + "]");
        const size_t bytes = size_t(rows) * size_t(cols) * dtype_size(dtype);
        const size_t alloc = std::max<size_t>(64, (bytes + 63) / 64 * 64);  // 64-byte lines, never a null pointer
        void*        p     = std::aligned_alloc(64, alloc);
        if (!p) throw BackendError("cpu backend: out of memory allocating " + std::to_string(bytes) + " bytes");
        std::memset(p, 0, alloc);
        return Tensor(TensorView::matrix(p, dtype, Device::Cpu, rows, cols), std::shared_ptr<void>(p, std::free));
    }
    void upload(const TensorView& dst, const void* host_src) override {
        DYLLM_ASSERT(dst.device == Device::Cpu && dst.contiguous(), "upload: destination " + shp(dst) +
                                                                        " is not a contiguous host tensor");
        if (dst.bytes()) std::memcpy(dst.data, host_src, dst.bytes());
    }
    void download(const TensorView& src, void* host_dst) override {
        DYLLM_ASSERT(src.device == Device::Cpu && src.contiguous(), "download: source " + shp(src) +
                                                                        " is not a contiguous host tensor");
        if (src.bytes()) std::memcpy(host_dst, src.data, src.bytes());
    }
    void       synchronize() override {}
    TensorView prepare_weight(const TensorView& host_weight, const std::string& name) override {
        DYLLM_ASSERT(host_weight.device == Device::Cpu, "prepare_weight: " + name + " is not in host memory");
        DYLLM_ASSERT(is_float(host_weight.dtype), "prepare_weight: " + name + " has dtype " +
                                                      dtype_name(host_weight.dtype) + ", expected F32/F16/BF16");
        return host_weight;  // weights stay memory-mapped in their stored dtype; kernels widen panels on the fly
    }

    // ---- ops ----------------------------------------------------------------------------------------------------
    void embed(const TensorView& table, std::span<const int32_t> ids, const TensorView& out) override {
        const ConstMat t = any_mat(table, "embed", "table");
        const MatF     o = mat(out, "embed", "out");
        DYLLM_ASSERT(o.rows == int64_t(ids.size()) && o.cols == t.cols,
                     "embed: out " + shp(out) + " for " + std::to_string(ids.size()) + " ids and table " + shp(table));
        for (size_t i = 0; i < ids.size(); ++i)
            DYLLM_ASSERT(ids[i] >= 0 && ids[i] < t.rows, "embed: id " + std::to_string(ids[i]) + " at " +
                                                             std::to_string(i) + " outside [0, " +
                                                             std::to_string(t.rows) + ")");
        cpu::embed(t, ids.data(), o);
    }

    void matmul(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& y) override {
        const CMatF    xm = cmat(x, "matmul", "x");
        const ConstMat wm = any_mat(w, "matmul", "w");
        const MatF     ym = mat(y, "matmul", "y");
        DYLLM_ASSERT(xm.cols == wm.cols && ym.rows == xm.rows && ym.cols == wm.rows,
                     "matmul: x " + shp(x) + ", w " + shp(w) + ", y " + shp(y) + " do not fit y = x w^T");
        DYLLM_ASSERT(!overlaps(x, y), "matmul: y aliases x");
        ConstMat bm{};
        if (!bias.empty()) {
            DYLLM_ASSERT(bias.numel() == wm.rows, "matmul: bias " + shp(bias) + " for " + std::to_string(wm.rows) +
                                                      " outputs");
            bm      = any_mat(bias, "matmul", "bias");
            bm.rows = 1;
            bm.cols = wm.rows;
        }
        cpu::matmul(xm, wm, bm, ym, pool_);
    }

    void rms_norm(const TensorView& x, const TensorView& w, float eps, const TensorView& y) override {
        const CMatF xm = cmat(x, "rms_norm", "x");
        const MatF  ym = mat(y, "rms_norm", "y");
        check_same_shape(x, y, "rms_norm", "x", "y");
        DYLLM_ASSERT(w.numel() == xm.cols, "rms_norm: weight " + shp(w) + " for rows of " + std::to_string(xm.cols));
        ConstMat wm = any_mat(w, "rms_norm", "w");
        wm.rows     = 1;
        wm.cols     = xm.cols;
        cpu::rms_norm(xm, wm, eps, ym);
    }

    void rope(const TensorView& x, std::span<const int32_t> positions, int n_head, int head_dim,
              float theta) override {
        const MatF xm = mat(x, "rope", "x");
        DYLLM_ASSERT(n_head > 0 && head_dim > 0 && head_dim % 2 == 0 && xm.cols == int64_t(n_head) * head_dim,
                     "rope: x " + shp(x) + " is not n_head " + std::to_string(n_head) + " x head_dim " +
                         std::to_string(head_dim) + " (even)");
        DYLLM_ASSERT(int64_t(positions.size()) == xm.rows,
                     "rope: " + std::to_string(positions.size()) + " positions for " + std::to_string(xm.rows) + " rows");
        cpu::rope(xm, positions.data(), n_head, head_dim, theta);
    }

    void add(const TensorView& a, const TensorView& b, const TensorView& y) override { binary(a, b, y, false); }
    void sub(const TensorView& a, const TensorView& b, const TensorView& y) override { binary(a, b, y, true); }

    void silu_mul(const TensorView& gate, const TensorView& up, const TensorView& y) override {
        check_same_shape(gate, up, "silu_mul", "gate", "up");
        check_same_shape(gate, y, "silu_mul", "gate", "y");
        cpu::silu_mul(cmat(gate, "silu_mul", "gate"), cmat(up, "silu_mul", "up"), mat(y, "silu_mul", "y"), pool_);
    }

    void copy(const TensorView& src, const TensorView& dst) override {
        check_same_shape(src, dst, "copy", "src", "dst");
        const ConstMat s = any_mat(src, "copy", "src");
        const ConstMat d = any_mat(dst, "copy", "dst");
        for (int64_t i = 0; i < s.rows; ++i)
            cpu::convert_row(s.row_ptr(i), s.type, const_cast<void*>(d.row_ptr(i)), d.type, s.cols);
    }

    void attention(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k, const TensorView& v,
                   std::span<const int32_t> cu_k, AttentionShape shape, const TensorView& out) override {
        const char* op = "attention";
        check_attention_shape(shape, op);
        const int64_t qd = int64_t(shape.n_head) * shape.head_dim, kvd = int64_t(shape.n_kv_head) * shape.head_dim;
        const CMatF   qm = cmat(q, op, "q");
        const MatF    om = mat(out, op, "out");
        DYLLM_ASSERT(qm.cols == qd && om.cols == qd && om.rows == qm.rows,
                     std::string(op) + ": q " + shp(q) + " / out " + shp(out) + " are not [nq, " + std::to_string(qd) + "]");
        check_same_shape(k, v, op, "k", "v");
        DYLLM_ASSERT(k.cols() == kvd, std::string(op) + ": k " + shp(k) + " is not [nk, " + std::to_string(kvd) + "]");
        check_offsets(cu_k, k.rows(), op, "cu_k");
        check_q_seq(q_seq, qm.rows, int(cu_k.size()) - 1, op);
        DYLLM_ASSERT(!overlaps(out, q) && !overlaps(out, k) && !overlaps(out, v), "attention: out aliases an input");
        const F32In km = f32_in(k, op, "k"), vm = f32_in(v, op, "v");
        cpu::attention(qm, q_seq.data(), km.m, vm.m, cu_k.data(), int(cu_k.size()) - 1,
                       cpu::AttnDims{shape.n_head, shape.n_kv_head, shape.head_dim}, om, pool_);
    }

    void attention_approx(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k,
                          const TensorView& dv, std::span<const int32_t> sal_k, std::span<const int32_t> cu_sal,
                          std::span<const int32_t> cu_k, const TensorView& c_old, AttentionShape shape,
                          const TensorView& c_new) override {
        const char* op = "attention_approx";
        check_attention_shape(shape, op);
        const int64_t qd = int64_t(shape.n_head) * shape.head_dim, kvd = int64_t(shape.n_kv_head) * shape.head_dim;
        const CMatF   qm = cmat(q, op, "q");
        const MatF    cn = mat(c_new, op, "c_new");
        DYLLM_ASSERT(qm.cols == qd, std::string(op) + ": q " + shp(q) + " is not [nq, " + std::to_string(qd) + "]");
        check_same_shape(q, c_old, op, "q", "c_old");
        check_same_shape(q, c_new, op, "q", "c_new");
        DYLLM_ASSERT(k.cols() == kvd && dv.cols() == kvd, std::string(op) + ": k " + shp(k) + " / dv " + shp(dv) +
                                                              " are not [_, " + std::to_string(kvd) + "]");
        check_offsets(cu_k, k.rows(), op, "cu_k");
        const int n_seq = int(cu_k.size()) - 1;
        check_q_seq(q_seq, qm.rows, n_seq, op);
        DYLLM_ASSERT(cu_sal.size() == cu_k.size(), std::string(op) + ": cu_sal has " + std::to_string(cu_sal.size()) +
                                                       " offsets, cu_k " + std::to_string(cu_k.size()));
        DYLLM_ASSERT(cu_sal[0] == 0, std::string(op) + ": cu_sal[0] must be 0");
        check_offsets(cu_sal, int64_t(sal_k.size()), op, "cu_sal");
        DYLLM_ASSERT(int64_t(sal_k.size()) == cu_sal.back() && dv.rows() == int64_t(sal_k.size()),
                     std::string(op) + ": " + std::to_string(sal_k.size()) + " salient keys, cu_sal ends at " +
                         std::to_string(cu_sal.back()) + ", dv " + shp(dv));
        for (int b = 0; b < n_seq; ++b)
            for (int32_t s = cu_sal[size_t(b)]; s < cu_sal[size_t(b) + 1]; ++s) {
                DYLLM_ASSERT(sal_k[size_t(s)] >= cu_k[size_t(b)] && sal_k[size_t(s)] < cu_k[size_t(b) + 1],
                             std::string(op) + ": salient key row " + std::to_string(sal_k[size_t(s)]) +
                                 " outside sequence " + std::to_string(b) + "'s keys");
                DYLLM_ASSERT(s == cu_sal[size_t(b)] || sal_k[size_t(s)] > sal_k[size_t(s) - 1],
                             std::string(op) + ": salient key rows of sequence " + std::to_string(b) +
                                 " are not strictly ascending");
            }
        DYLLM_ASSERT(!overlaps(c_new, q) && !overlaps(c_new, k) && !overlaps(c_new, dv),
                     "attention_approx: c_new aliases q, k or dv");
        DYLLM_ASSERT(!overlaps(c_new, c_old) || (c_new.data == c_old.data && c_old.dtype == DType::F32 &&
                                                 c_old.nb[1] == c_new.nb[1]),
                     "attention_approx: c_new partially overlaps c_old");
        const F32In km = f32_in(k, op, "k"), dvm = f32_in(dv, op, "dv"), co = f32_in(c_old, op, "c_old");
        cpu::attention_approx(qm, q_seq.data(), km.m, dvm.m, sal_k.data(), cu_sal.data(), cu_k.data(), n_seq, co.m,
                              cpu::AttnDims{shape.n_head, shape.n_kv_head, shape.head_dim}, cn, pool_);
    }

    void gather_rows(const TensorView& src, std::span<const int32_t> idx, const TensorView& dst) override {
        const ConstMat s = any_mat(src, "gather_rows", "src");
        const ConstMat d = any_mat(dst, "gather_rows", "dst");
        DYLLM_ASSERT(d.rows == int64_t(idx.size()) && d.cols == s.cols,
                     "gather_rows: dst " + shp(dst) + " for " + std::to_string(idx.size()) + " rows of src " + shp(src));
        check_indices(idx, s.rows, "gather_rows");
        cpu::gather_rows(s, idx.data(), int64_t(idx.size()), const_cast<void*>(d.data), d.type, d.ld);
    }

    void scatter_rows(const TensorView& src, std::span<const int32_t> idx, const TensorView& dst) override {
        const ConstMat s = any_mat(src, "scatter_rows", "src");
        const ConstMat d = any_mat(dst, "scatter_rows", "dst");
        DYLLM_ASSERT(s.rows == int64_t(idx.size()) && d.cols == s.cols,
                     "scatter_rows: src " + shp(src) + " for " + std::to_string(idx.size()) + " rows of dst " + shp(dst));
        check_indices(idx, d.rows, "scatter_rows");
        cpu::scatter_rows(s, idx.data(), int64_t(idx.size()), const_cast<void*>(d.data), d.type, d.ld);
    }

    void cosine_rows(const TensorView& a, const TensorView& b, std::span<float> cos_out) override {
        check_same_shape(a, b, "cosine_rows", "a", "b");
        DYLLM_ASSERT(int64_t(cos_out.size()) == a.rows(), "cosine_rows: " + std::to_string(cos_out.size()) +
                                                             " outputs for " + std::to_string(a.rows()) + " rows");
        const F32In am = f32_in(a, "cosine_rows", "a"), bm = f32_in(b, "cosine_rows", "b");
        cpu::cosine_rows(am.m, bm.m, cos_out.data());
    }

    void score_logits(const TensorView& logits, ScoreKind kind, std::span<const int32_t> banned,
                      std::span<int32_t> tokens_out, std::span<float> scores_out) override {
        const CMatF l = cmat(logits, "score_logits", "logits");
        DYLLM_ASSERT(int64_t(tokens_out.size()) == l.rows && int64_t(scores_out.size()) == l.rows,
                     "score_logits: " + std::to_string(tokens_out.size()) + " token and " +
                         std::to_string(scores_out.size()) + " score slots for " + std::to_string(l.rows) + " rows");
        check_indices(banned, l.cols, "score_logits (banned ids)");
        cpu::score_logits(l, kind == ScoreKind::Confidence ? cpu::ScoreRule::Confidence : cpu::ScoreRule::NegEntropy,
                          banned.data(), int64_t(banned.size()), tokens_out.data(), scores_out.data(), pool_);
    }

private:
    static void check_indices(std::span<const int32_t> idx, int64_t limit, const char* op) {
        for (size_t i = 0; i < idx.size(); ++i)
            DYLLM_ASSERT(idx[i] >= 0 && idx[i] < limit, std::string(op) + ": index " + std::to_string(idx[i]) +
                                                            " at " + std::to_string(i) + " outside [0, " +
                                                            std::to_string(limit) + ")");
    }

    void binary(const TensorView& a, const TensorView& b, const TensorView& y, bool subtract) {
        const char* op = subtract ? "sub" : "add";
        check_same_shape(a, b, op, "a", "b");
        check_same_shape(a, y, op, "a", "y");
        if (a.dtype == DType::F32 && b.dtype == DType::F32 && y.dtype == DType::F32) {
            const CMatF am = cmat(a, op, "a"), bm = cmat(b, op, "b");
            const MatF  ym = mat(y, op, "y");
            subtract ? cpu::sub(am, bm, ym) : cpu::add(am, bm, ym);
            return;
        }
        // Mixed storage (e.g. a BF16 cache): widen the inputs, compute in fp32, round once into y.
        const F32In am = f32_in(a, op, "a"), bm = f32_in(b, op, "b");
        F32Out      ym = f32_out(y, op, "y");
        subtract ? cpu::sub(am.m, bm.m, ym.m) : cpu::add(am.m, bm.m, ym.m);
        ym.finish();
    }

    int             n_threads_;
    cpu::ThreadPool pool_;
    std::string     blas_name_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int n_threads) {
    if (n_threads <= 0) n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
    return std::make_unique<CpuBackend>(n_threads);
}

}  // namespace dyllm
