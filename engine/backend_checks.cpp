// The public Backend ops: each validates its arguments once, for every backend, and then calls the backend's do_<op>()
// (ggml checks in its op constructors, once). A failed check is a caller bug: DYLLM_ASSERT names the op, the operand
// and the values.
#include <string>

#include "engine/backend.h"
#include "engine/errors.h"

namespace dyllm {

namespace {

std::string shp(const TensorView& v) {
    // Appends instead of operator+ chains: g++ 12 reports a false -Wrestrict on "[" + std::string (GCC bug 105329).
    std::string s("[");
    s.append(std::to_string(v.rows())).append(", ").append(std::to_string(v.cols())).append("] ");
    return s.append(dtype_name(v.dtype));
}

std::string at(const char* op, const char* what) {
    return std::string(op) + ": " + what;
}

// The layout every kernel needs: on this backend's device, contiguous columns, rows at a fixed stride (a 2-D matrix or
// a row-contiguous higher-dimensional view). An empty view is accepted as it is (no memory is touched).
void check_layout(const Backend& be, const TensorView& v, const char* op, const char* what) {
    if (v.numel() == 0) return;
    DYLLM_ASSERT(v.device == be.device(), at(op, what) + " " + shp(v) + " is not in " + be.name() + " memory");
    DYLLM_ASSERT(v.data != nullptr, at(op, what) + " has no data");
    if (is_quantized(v.dtype)) {
        // Blocks (ggml's convention): nb[0] is one block, a row is whole blocks, rows at a stride of whole blocks.
        const int64_t bb = int64_t(dtype_block_bytes(v.dtype)), be_ = dtype_block_elems(v.dtype);
        DYLLM_ASSERT(v.ne[0] % be_ == 0, at(op, what) + " " + shp(v) + ": row length is not a whole number of " +
                                             std::to_string(be_) + "-element blocks");
        DYLLM_ASSERT(v.nb[0] == bb, at(op, what) + " blocks are not contiguous");
        DYLLM_ASSERT(v.nb[1] % bb == 0 && v.nb[1] >= int64_t(dtype_row_bytes(v.dtype, v.ne[0])),
                     at(op, what) + " row stride " + std::to_string(v.nb[1]) + " is invalid");
    } else {
        const int64_t es = int64_t(dtype_size(v.dtype));
        DYLLM_ASSERT(v.nb[0] == es, at(op, what) + " columns are not contiguous");
        DYLLM_ASSERT(v.nb[1] % es == 0 && v.nb[1] >= es * v.ne[0],
                     at(op, what) + " row stride " + std::to_string(v.nb[1]) + " is invalid");
    }
    DYLLM_ASSERT((v.ne[2] == 1 || v.nb[2] == v.nb[1] * v.ne[1]) && (v.ne[3] == 1 || v.nb[3] == v.nb[2] * v.ne[2]),
                 at(op, what) + " is not a 2-D row-strided matrix");
}

// An operand whose storage dtype the backend chooses to accept (weights, caches): any dtype supports(op, .) allows.
void check_stored(const Backend& be, OpKind kind, const TensorView& v, const char* op, const char* what) {
    DYLLM_ASSERT(be.supports(kind, v.dtype), at(op, what) + " " + shp(v) + ": dtype " + dtype_name(v.dtype) +
                                                 " is not supported by the " + be.name() + " backend");
    check_layout(be, v, op, what);
}

// An activation operand: always F32 (and the backend must support the op in F32).
void check_f32(const Backend& be, OpKind kind, const TensorView& v, const char* op, const char* what) {
    DYLLM_ASSERT(v.dtype == DType::F32, at(op, what) + " must be F32, got " + dtype_name(v.dtype));
    check_stored(be, kind, v, op, what);
}

void check_same_shape(const TensorView& a, const TensorView& b, const char* op, const char* an, const char* bn) {
    DYLLM_ASSERT(a.rows() == b.rows() && a.cols() == b.cols(),
                 at(op, an) + " " + shp(a) + " and " + bn + " " + shp(b) + " differ in shape");
}

bool overlaps(const TensorView& a, const TensorView& b) {
    if (a.numel() == 0 || b.numel() == 0) return false;
    const char* a0 = static_cast<const char*>(a.data);
    const char* b0 = static_cast<const char*>(b.data);
    const char* a1 = a0 + (a.rows() - 1) * a.nb[1] + a.cols() * a.nb[0];
    const char* b1 = b0 + (b.rows() - 1) * b.nb[1] + b.cols() * b.nb[0];
    return a0 < b1 && b0 < a1;
}

// cu: n_seq + 1 offsets, cu[0] >= 0, non-decreasing, cu[n_seq] <= limit.
void check_offsets(std::span<const int32_t> cu, int64_t limit, const char* op, const char* what) {
    DYLLM_ASSERT(!cu.empty(), at(op, what) + " is empty (needs n_seq + 1 offsets)");
    DYLLM_ASSERT(cu[0] >= 0, at(op, what) + "[0] = " + std::to_string(cu[0]) + " < 0");
    for (size_t b = 1; b < cu.size(); ++b)
        DYLLM_ASSERT(cu[b] >= cu[b - 1], at(op, what) + " decreases at " + std::to_string(b));
    DYLLM_ASSERT(cu.back() <= limit, at(op, what) + " ends at " + std::to_string(cu.back()) + " past the " +
                                         std::to_string(limit) + " rows");
}

void check_indices(std::span<const int32_t> idx, int64_t limit, const char* op, const char* what) {
    for (size_t i = 0; i < idx.size(); ++i)
        DYLLM_ASSERT(idx[i] >= 0 && idx[i] < limit, at(op, what) + " " + std::to_string(idx[i]) + " at " +
                                                        std::to_string(i) + " outside [0, " + std::to_string(limit) +
                                                        ")");
}

void check_attention_shape(AttentionShape s, const char* op) {
    DYLLM_ASSERT(s.n_head > 0 && s.n_kv_head > 0 && s.head_dim > 0 && s.n_head % s.n_kv_head == 0,
                 std::string(op) + ": bad shape n_head " + std::to_string(s.n_head) + ", n_kv_head " +
                     std::to_string(s.n_kv_head) + ", head_dim " + std::to_string(s.head_dim));
}

void check_q_seq(std::span<const int32_t> q_seq, int64_t nq, int n_seq, const char* op) {
    DYLLM_ASSERT(int64_t(q_seq.size()) == nq, std::string(op) + ": q_seq has " + std::to_string(q_seq.size()) +
                                                  " entries for " + std::to_string(nq) + " query rows");
    check_indices(q_seq, n_seq, op, "q_seq sequence");
}

// The operands both attention ops share: q and the output [nq, H_q*D] F32, k [nk, H_kv*D], cu_k over k's rows, q_seq.
void check_attention_common(const Backend& be, OpKind kind, const TensorView& q, std::span<const int32_t> q_seq,
                            const TensorView& k, std::span<const int32_t> cu_k, AttentionShape shape,
                            const TensorView& out, const char* op, const char* out_name) {
    check_attention_shape(shape, op);
    const int64_t qd = int64_t(shape.n_head) * shape.head_dim, kvd = int64_t(shape.n_kv_head) * shape.head_dim;
    check_f32(be, kind, q, op, "q");
    check_f32(be, kind, out, op, out_name);
    DYLLM_ASSERT(q.cols() == qd, at(op, "q") + " " + shp(q) + " is not [nq, " + std::to_string(qd) + "]");
    check_same_shape(q, out, op, "q", out_name);
    check_stored(be, kind, k, op, "k");
    DYLLM_ASSERT(k.cols() == kvd, at(op, "k") + " " + shp(k) + " is not [nk, " + std::to_string(kvd) + "]");
    check_offsets(cu_k, k.rows(), op, "cu_k");
    check_q_seq(q_seq, q.rows(), int(cu_k.size()) - 1, op);
}

// The salient-key operands of attention_approx / attention_cols: dv [ns, H_kv*D] matches k's width, cu_sal has one
// offset per sequence, and each sequence's salient key rows lie inside its own key range, strictly ascending (the
// kernels merge them with the keys in order and build per-tile masks from them).
void check_salient_keys(const Backend& be, OpKind kind, const TensorView& k, const TensorView& dv,
                        std::span<const int32_t> sal_k, std::span<const int32_t> cu_sal, std::span<const int32_t> cu_k,
                        const char* op) {
    check_stored(be, kind, dv, op, "dv");
    DYLLM_ASSERT(dv.cols() == k.cols(), std::string(op) + ": dv " + shp(dv) + " and k " + shp(k) + " differ in width");
    DYLLM_ASSERT(cu_sal.size() == cu_k.size(), std::string(op) + ": cu_sal has " + std::to_string(cu_sal.size()) +
                                                   " offsets, cu_k " + std::to_string(cu_k.size()));
    DYLLM_ASSERT(cu_sal[0] == 0, std::string(op) + ": cu_sal[0] must be 0, got " + std::to_string(cu_sal[0]));
    check_offsets(cu_sal, int64_t(sal_k.size()), op, "cu_sal");
    DYLLM_ASSERT(int64_t(sal_k.size()) == cu_sal.back() && dv.rows() == int64_t(sal_k.size()),
                 std::string(op) + ": " + std::to_string(sal_k.size()) + " salient keys, cu_sal ends at " +
                     std::to_string(cu_sal.back()) + ", dv " + shp(dv));
    for (size_t b = 0; b + 1 < cu_k.size(); ++b)
        for (int32_t s = cu_sal[b]; s < cu_sal[b + 1]; ++s) {
            const int32_t j = sal_k[size_t(s)];
            DYLLM_ASSERT(j >= cu_k[b] && j < cu_k[b + 1], std::string(op) + ": salient key row " + std::to_string(j) +
                                                              " outside sequence " + std::to_string(b) + "'s keys [" +
                                                              std::to_string(cu_k[b]) + ", " +
                                                              std::to_string(cu_k[b + 1]) + ")");
            DYLLM_ASSERT(s == cu_sal[b] || j > sal_k[size_t(s) - 1],
                         std::string(op) + ": salient key rows of sequence " + std::to_string(b) +
                             " are not strictly ascending");
        }
}

// The contexts of attention_approx / attention_cols: c_old like q; c_new aliases no input, and c_old only exactly
// (an F32 c_old in place: each row reads its c_old before writing c_new).
void check_context_update(const Backend& be, OpKind kind, const TensorView& q, const TensorView& k,
                          const TensorView& dv, const TensorView& c_old, const TensorView& c_new, const char* op) {
    check_same_shape(q, c_old, op, "q", "c_old");
    check_stored(be, kind, c_old, op, "c_old");
    DYLLM_ASSERT(!overlaps(c_new, q) && !overlaps(c_new, k) && !overlaps(c_new, dv),
                 std::string(op) + ": c_new aliases q, k or dv");
    DYLLM_ASSERT(!overlaps(c_new, c_old) ||
                     (c_new.data == c_old.data && c_old.dtype == DType::F32 && c_old.nb[1] == c_new.nb[1]),
                 std::string(op) + ": c_new partially overlaps c_old");
}

// An [nq, n_head] F32 log-sum-exp operand.
void check_lse(const Backend& be, OpKind kind, const TensorView& lse, const TensorView& q, AttentionShape shape,
               const char* op) {
    check_f32(be, kind, lse, op, "lse");
    DYLLM_ASSERT(lse.rows() == q.rows() && lse.cols() == shape.n_head, at(op, "lse") + " " + shp(lse) + " is not [" +
                                                                           std::to_string(q.rows()) + ", " +
                                                                           std::to_string(shape.n_head) + "]");
}

}  // namespace

void Backend::embed(const TensorView& table, std::span<const int32_t> ids, const TensorView& out) {
    const char* op = "embed";
    check_stored(*this, OpKind::Embed, table, op, "table");
    check_f32(*this, OpKind::Embed, out, op, "out");
    DYLLM_ASSERT(out.rows() == int64_t(ids.size()) && out.cols() == table.cols(),
                 "embed: out " + shp(out) + " for " + std::to_string(ids.size()) + " ids and table " + shp(table));
    check_indices(ids, table.rows(), op, "id");
    do_embed(table, ids, out);
}

void Backend::matmul(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& y) {
    const char* op = "matmul";
    check_f32(*this, OpKind::MatMul, x, op, "x");
    check_stored(*this, OpKind::MatMul, w, op, "w");
    check_f32(*this, OpKind::MatMul, y, op, "y");
    DYLLM_ASSERT(x.cols() == w.cols() && y.rows() == x.rows() && y.cols() == w.rows(),
                 "matmul: x " + shp(x) + ", w " + shp(w) + ", y " + shp(y) + " do not fit y = x w^T");
    DYLLM_ASSERT(!overlaps(x, y), "matmul: y aliases x");
    if (!bias.empty()) {
        DYLLM_ASSERT(bias.numel() == w.rows(),
                     "matmul: bias " + shp(bias) + " for " + std::to_string(w.rows()) + " outputs");
        check_stored(*this, OpKind::MatMul, bias, op, "bias");
        DYLLM_ASSERT(is_float(bias.dtype), "matmul: bias " + shp(bias) + " must be F32/F16/BF16");
    }
    do_matmul(x, w, bias, y);
}

void Backend::rms_norm(const TensorView& x, const TensorView& w, float eps, const TensorView& y) {
    const char* op = "rms_norm";
    check_f32(*this, OpKind::RmsNorm, x, op, "x");
    check_f32(*this, OpKind::RmsNorm, y, op, "y");
    check_same_shape(x, y, op, "x", "y");
    DYLLM_ASSERT(w.numel() == x.cols(), "rms_norm: weight " + shp(w) + " for rows of " + std::to_string(x.cols()));
    check_stored(*this, OpKind::RmsNorm, w, op, "w");
    do_rms_norm(x, w, eps, y);
}

void Backend::rope(const TensorView& x, std::span<const int32_t> positions, int n_head, int head_dim, float theta) {
    check_f32(*this, OpKind::Rope, x, "rope", "x");
    DYLLM_ASSERT(n_head > 0 && head_dim > 0 && head_dim % 2 == 0 && x.cols() == int64_t(n_head) * head_dim,
                 "rope: x " + shp(x) + " is not n_head " + std::to_string(n_head) + " x head_dim " +
                     std::to_string(head_dim) + " (even)");
    DYLLM_ASSERT(int64_t(positions.size()) == x.rows(),
                 "rope: " + std::to_string(positions.size()) + " positions for " + std::to_string(x.rows()) + " rows");
    do_rope(x, positions, n_head, head_dim, theta);
}

namespace {
// add and sub: a, b, y of one shape, each in any dtype the backend supports for the op (a BF16 cache, say).
void check_binary(const Backend& be, OpKind kind, const TensorView& a, const TensorView& b, const TensorView& y,
                  const char* op) {
    check_same_shape(a, b, op, "a", "b");
    check_same_shape(a, y, op, "a", "y");
    check_stored(be, kind, a, op, "a");
    check_stored(be, kind, b, op, "b");
    check_stored(be, kind, y, op, "y");
}
}  // namespace

void Backend::add(const TensorView& a, const TensorView& b, const TensorView& y) {
    check_binary(*this, OpKind::Add, a, b, y, "add");
    do_add(a, b, y);
}

void Backend::sub(const TensorView& a, const TensorView& b, const TensorView& y) {
    check_binary(*this, OpKind::Sub, a, b, y, "sub");
    do_sub(a, b, y);
}

void Backend::silu_mul(const TensorView& gate, const TensorView& up, const TensorView& y) {
    const char* op = "silu_mul";
    check_same_shape(gate, up, op, "gate", "up");
    check_same_shape(gate, y, op, "gate", "y");
    check_f32(*this, OpKind::SiluMul, gate, op, "gate");
    check_f32(*this, OpKind::SiluMul, up, op, "up");
    check_f32(*this, OpKind::SiluMul, y, op, "y");
    do_silu_mul(gate, up, y);
}

void Backend::copy(const TensorView& src, const TensorView& dst) {
    const char* op = "copy";
    check_same_shape(src, dst, op, "src", "dst");
    check_stored(*this, OpKind::Copy, src, op, "src");
    check_stored(*this, OpKind::Copy, dst, op, "dst");
    do_copy(src, dst);
}

void Backend::attention(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k, const TensorView& v,
                        std::span<const int32_t> cu_k, AttentionShape shape, const TensorView& out,
                        const TensorView& lse) {
    const char* op = "attention";
    check_attention_common(*this, OpKind::Attention, q, q_seq, k, cu_k, shape, out, op, "out");
    check_same_shape(k, v, op, "k", "v");
    check_stored(*this, OpKind::Attention, v, op, "v");
    DYLLM_ASSERT(!overlaps(out, q) && !overlaps(out, k) && !overlaps(out, v), "attention: out aliases an input");
    if (lse.data) {
        check_lse(*this, OpKind::Attention, lse, q, shape, op);
        DYLLM_ASSERT(!overlaps(lse, q) && !overlaps(lse, k) && !overlaps(lse, v) && !overlaps(lse, out),
                     "attention: lse aliases an operand");
    }
    do_attention(q, q_seq, k, v, cu_k, shape, out, lse);
}

void Backend::attention_approx(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k,
                               const TensorView& dv, std::span<const int32_t> sal_k, std::span<const int32_t> cu_sal,
                               std::span<const int32_t> cu_k, const TensorView& c_old, AttentionShape shape,
                               const TensorView& c_new) {
    const char* op = "attention_approx";
    check_attention_common(*this, OpKind::AttentionApprox, q, q_seq, k, cu_k, shape, c_new, op, "c_new");
    check_salient_keys(*this, OpKind::AttentionApprox, k, dv, sal_k, cu_sal, cu_k, op);
    check_context_update(*this, OpKind::AttentionApprox, q, k, dv, c_old, c_new, op);
    do_attention_approx(q, q_seq, k, dv, sal_k, cu_sal, cu_k, c_old, shape, c_new);
}

void Backend::attention_approx_exact(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k,
                                     const TensorView& v, const TensorView& dv, std::span<const int32_t> sal_k,
                                     std::span<const int32_t> cu_sal, std::span<const int32_t> cu_k,
                                     std::span<const int32_t> exact, const TensorView& c_old, AttentionShape shape,
                                     const TensorView& c_new) {
    const char* op = "attention_approx_exact";
    DYLLM_ASSERT(fuses_exact_rows(), std::string(op) + ": the " + name() + " backend has no fused exact rows");
    check_attention_common(*this, OpKind::AttentionApprox, q, q_seq, k, cu_k, shape, c_new, op, "c_new");
    check_salient_keys(*this, OpKind::AttentionApprox, k, dv, sal_k, cu_sal, cu_k, op);
    check_context_update(*this, OpKind::AttentionApprox, q, k, dv, c_old, c_new, op);
    check_same_shape(k, v, op, "k", "v");
    check_stored(*this, OpKind::AttentionApprox, v, op, "v");
    DYLLM_ASSERT(!overlaps(c_new, v), std::string(op) + ": c_new aliases v");
    check_indices(exact, q.rows(), op, "exact row");
    for (size_t e = 1; e < exact.size(); ++e)
        DYLLM_ASSERT(exact[e] > exact[e - 1],
                     std::string(op) + ": exact rows are not strictly ascending at " + std::to_string(e));
    do_attention_approx_exact(q, q_seq, k, v, dv, sal_k, cu_sal, cu_k, exact, c_old, shape, c_new);
}

void Backend::do_attention_approx_exact(const TensorView&, std::span<const int32_t>, const TensorView&,
                                        const TensorView&, const TensorView&, std::span<const int32_t>,
                                        std::span<const int32_t>, std::span<const int32_t>, std::span<const int32_t>,
                                        const TensorView&, AttentionShape, const TensorView&) {
    DYLLM_ASSERT(false, std::string("attention_approx_exact: not implemented by the ") + name() + " backend");
}

void Backend::attention_cols(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k,
                             const TensorView& dv, std::span<const int32_t> sal_k, std::span<const int32_t> cu_sal,
                             std::span<const int32_t> cu_k, const TensorView& lse, const TensorView& c_old,
                             AttentionShape shape, const TensorView& c_new, const TensorView& k_old,
                             const TensorView& v_old, const TensorView& lse_out) {
    const char* op = "attention_cols";
    check_attention_common(*this, OpKind::AttentionCols, q, q_seq, k, cu_k, shape, c_new, op, "c_new");
    check_salient_keys(*this, OpKind::AttentionCols, k, dv, sal_k, cu_sal, cu_k, op);
    check_context_update(*this, OpKind::AttentionCols, q, k, dv, c_old, c_new, op);
    check_lse(*this, OpKind::AttentionCols, lse, q, shape, op);
    DYLLM_ASSERT(!overlaps(c_new, lse), "attention_cols: c_new aliases lse");
    const bool inc = k_old.data != nullptr;
    DYLLM_ASSERT(inc == (v_old.data != nullptr) && (inc || !lse_out.data),
                 "attention_cols: k_old and v_old come together, and lse_out only with them (the incremental form)");
    if (inc) {
        check_stored(*this, OpKind::AttentionCols, k_old, op, "k_old");
        check_stored(*this, OpKind::AttentionCols, v_old, op, "v_old");
        check_same_shape(dv, k_old, op, "dv", "k_old");
        check_same_shape(dv, v_old, op, "dv", "v_old");
        DYLLM_ASSERT(!overlaps(c_new, k_old) && !overlaps(c_new, v_old),
                     "attention_cols: c_new aliases k_old or v_old");
    }
    if (lse_out.data) {
        check_lse(*this, OpKind::AttentionCols, lse_out, q, shape, op);
        DYLLM_ASSERT(lse_out.data == lse.data || !overlaps(lse_out, lse),
                     "attention_cols: lse_out partially overlaps lse");
        DYLLM_ASSERT(!overlaps(lse_out, c_new) && !overlaps(lse_out, c_old) && !overlaps(lse_out, q),
                     "attention_cols: lse_out aliases a context or q");
    }
    do_attention_cols(q, q_seq, k, dv, sal_k, cu_sal, lse, c_old, shape, c_new, k_old, v_old, lse_out);
}

void Backend::gather_rows(const TensorView& src, std::span<const int32_t> idx, const TensorView& dst) {
    const char* op = "gather_rows";
    check_stored(*this, OpKind::GatherRows, src, op, "src");
    check_stored(*this, OpKind::GatherRows, dst, op, "dst");
    DYLLM_ASSERT(dst.rows() == int64_t(idx.size()) && dst.cols() == src.cols(),
                 "gather_rows: dst " + shp(dst) + " for " + std::to_string(idx.size()) + " rows of src " + shp(src));
    check_indices(idx, src.rows(), op, "index");
    do_gather_rows(src, idx, dst);
}

void Backend::scatter_rows(const TensorView& src, std::span<const int32_t> idx, const TensorView& dst) {
    const char* op = "scatter_rows";
    check_stored(*this, OpKind::ScatterRows, src, op, "src");
    check_stored(*this, OpKind::ScatterRows, dst, op, "dst");
    DYLLM_ASSERT(src.rows() == int64_t(idx.size()) && dst.cols() == src.cols(),
                 "scatter_rows: src " + shp(src) + " for " + std::to_string(idx.size()) + " rows of dst " + shp(dst));
    check_indices(idx, dst.rows(), op, "index");
    do_scatter_rows(src, idx, dst);
}

void Backend::add_rows(const TensorView& src, std::span<const int32_t> idx, const TensorView& y) {
    const char* op = "add_rows";
    check_stored(*this, OpKind::AddRows, src, op, "src");
    check_f32(*this, OpKind::AddRows, y, op, "y");
    DYLLM_ASSERT(y.rows() == int64_t(idx.size()) && y.cols() == src.cols(),
                 "add_rows: y " + shp(y) + " for " + std::to_string(idx.size()) + " rows of src " + shp(src));
    DYLLM_ASSERT(!overlaps(src, y), "add_rows: y aliases src");
    check_indices(idx, src.rows(), op, "index");
    do_add_rows(src, idx, y);
}

void Backend::cosine_rows(const TensorView& a, const TensorView& b, std::span<float> cos_out) {
    const char* op = "cosine_rows";
    check_same_shape(a, b, op, "a", "b");
    check_stored(*this, OpKind::Cosine, a, op, "a");
    check_stored(*this, OpKind::Cosine, b, op, "b");
    DYLLM_ASSERT(int64_t(cos_out.size()) == a.rows(), "cosine_rows: " + std::to_string(cos_out.size()) +
                                                          " outputs for " + std::to_string(a.rows()) + " rows");
    do_cosine_rows(a, b, cos_out);
}

void Backend::score_logits(const TensorView& logits, ScoreKind kind, std::span<const int32_t> banned,
                           std::span<int32_t> tokens_out, std::span<float> scores_out) {
    const char* op = "score_logits";
    check_f32(*this, OpKind::ScoreLogits, logits, op, "logits");
    DYLLM_ASSERT(int64_t(tokens_out.size()) == logits.rows() && int64_t(scores_out.size()) == logits.rows(),
                 "score_logits: " + std::to_string(tokens_out.size()) + " token and " +
                     std::to_string(scores_out.size()) + " score slots for " + std::to_string(logits.rows()) + " rows");
    check_indices(banned, logits.cols(), op, "banned id");
    do_score_logits(logits, kind, banned, tokens_out, scores_out);
}

}  // namespace dyllm
