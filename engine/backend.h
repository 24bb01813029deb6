// The Backend interface: one op per step of the forward passes, at op granularity, so the model code
// in engine/forward.cpp is written once and runs on the CPU or on CUDA. Each public op is non-virtual: it checks its
// arguments once (engine/backend_checks.cpp, as ggml checks in its op constructors) and then calls the backend's
// do_<op>(), so the backends cannot drift in what they accept. Index lists (token ids, positions, row indices,
// per-sequence offsets) are passed as host spans; a device backend uploads them itself.
//
// Conventions for every op:
// - Activations are F32 2-D views [rows, cols] (engine/tensor.h). Cache views (k, v, dv, c_old, gather/scatter
//   sources and destinations) may be F32 or cache_dtype() (BF16 on CUDA); ops widen on load, accumulate in fp32.
// - Weights are [out, in] views in F32, F16 or BF16, as prepare_weight() returned them.
// - Multi-head activations are [n_tokens, n_head * head_dim]; query head h reads KV head h / (n_head / n_kv_head)
// (GQA).
// - Attention is bidirectional (no causal mask) and never crosses sequences: query row i belongs to sequence
//   q_seq[i] and attends to key rows [cu_k[b], cu_k[b+1]) of the packed K/V.
// - Every op accepts zero rows (empty salient sets are legal, engine/README.md decision 8).
// - A bad argument (shape, dtype the backend does not support(), view not on device(), index out of range, offsets
//   decreasing, salient keys out of order, an output aliasing an input) is a caller bug: DYLLM_ASSERT names the op,
//   the operand and the values.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "engine/tensor.h"

namespace dyllm {

enum class OpKind : uint8_t {
    Embed,
    MatMul,
    RmsNorm,
    Rope,
    Add,
    Sub,
    SiluMul,
    Attention,
    AttentionApprox,
    AttentionCols,
    GatherRows,
    ScatterRows,
    AddRows,
    Cosine,
    ScoreLogits,
    Copy,
    Count
};
const char* op_kind_name(OpKind k);

// The dtype support both backends share: ops on weights or cache operands take any float storage (widened on
// load); ops on activations only take F32.
bool op_supports_dtype(OpKind op, DType dtype);

enum class BackendKind : uint8_t { Cpu, Cuda, Auto };
const char* backend_kind_name(BackendKind k);

// How the sampler scores a position (engine/README.md §a.9 step 4).
enum class ScoreKind : uint8_t {
    Confidence,  // LLaDA: softmax probability of the argmax token
    NegEntropy,  // Dream: sum_v p_v log(p_v + 1e-10), higher is more confident
};

struct AttentionShape {
    int n_head    = 0;  // query heads H_q
    int n_kv_head = 0;  // key/value heads H_kv (divides n_head)
    int head_dim  = 0;  // D; scores are scaled by 1/sqrt(D)
};

class Backend {
public:
    virtual ~Backend() = default;

    virtual const char* name() const        = 0;  // "cpu", "cuda"
    virtual Device      device() const      = 0;
    virtual std::string description() const = 0;  // "cpu (2 threads, OpenBLAS 0.3.21)", "cuda (NVIDIA H100, sm_90)"
    virtual int         host_threads() const { return 1; }  // CPU threads the ops run on (the CPU backend's pool)
    virtual bool        supports(OpKind op, DType dtype) const = 0;
    virtual DType       cache_dtype() const                    = 0;  // storage dtype of the K/V/context/FFN caches
    // Whether attention_approx_exact runs as one fused pass here (else the caller runs attention_approx and then
    // attention on the exact rows; the results are the same).
    virtual bool fuses_exact_rows() const { return false; }
    // --compute f32: from now on every weight product widens the stored weight to fp32 and multiplies fp32
    // activations (no bf16 rounding of x, no bf16 GEMM). Returns false where the backend cannot (then nothing
    // changes); turning it off always succeeds.
    virtual bool set_compute_f32(bool on) { return !on; }

    // ---- memory -------------------------------------------------------------------------------------------------
    // A zero-initialised contiguous [rows, cols] tensor on this backend.
    virtual Tensor alloc(DType dtype, int64_t rows, int64_t cols) = 0;
    // Copies between host memory and a contiguous tensor of this backend (bytes = dst/src.bytes()).
    virtual void upload(const TensorView& dst, const void* host_src) = 0;
    virtual void download(const TensorView& src, void* host_dst)     = 0;
    virtual void synchronize()                                       = 0;
    // A weight as this backend wants it: the CPU keeps the host (memory-mapped) view as stored; CUDA copies to the
    // device (F32 converted to BF16). The returned view stays valid while the backend lives.
    virtual TensorView prepare_weight(const TensorView& host_weight, const std::string& name) = 0;
    // Forgets what prepare_weight kept for this host view (the CPU's packed copy, CUDA's device copy); call it before
    // the host memory is freed, or a later weight stored at the same address would be matched to the old copy.
    // A view that was never prepared is ignored. Models never call it (their weights live as long as the backend).
    virtual void release_weight(const TensorView& host_weight) = 0;

    // ---- ops ------------------------------------------------------------------------------------------------------
    // out[i, :] = table[ids[i], :]. table: [n_vocab, n_embd] (any weight dtype); out: [n, n_embd] F32.
    void embed(const TensorView& table, std::span<const int32_t> ids, const TensorView& out);
    // y = x W^T (+ bias). x: [n, k] F32; w: [m, k]; bias: [m] or empty view; y: [n, m] F32. y must not alias x.
    void matmul(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& y);
    // y = x * rsqrt(mean(x^2) + eps) * w, fp32 math. x, y: [n, d] (may alias); w: [d].
    void rms_norm(const TensorView& x, const TensorView& w, float eps, const TensorView& y);
    // In place rotate-half RoPE on every head of x: [n, n_head * head_dim]; positions: [n]; fp32 angles
    // inv_freq_i = theta^(-2i / head_dim).
    void rope(const TensorView& x, std::span<const int32_t> positions, int n_head, int head_dim, float theta);
    // y = a + b and y = a - b, elementwise, same shapes (y may alias a or b; y may be the cache dtype for sub).
    void add(const TensorView& a, const TensorView& b, const TensorView& y);
    void sub(const TensorView& a, const TensorView& b, const TensorView& y);
    // y = silu(gate) * up. gate, up, y: [n, f] (y may alias gate).
    void silu_mul(const TensorView& gate, const TensorView& up, const TensorView& y);
    // dst = src (same shape; converts between F32 and the cache dtype).
    void copy(const TensorView& src, const TensorView& dst);

    // Exact attention. q: [nq, H_q*D]; q_seq: [nq] sequence of each query row; k, v: [nk, H_kv*D] packed keys of all
    // sequences; cu_k: [B+1] key offsets; out: [nq, H_q*D] F32. lse (optional, [nq, H_q] F32): the log-sum-exp of each
    // (row, head)'s scaled scores (-inf without keys), the softmax statistics attention_cols reuses.
    void attention(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k, const TensorView& v,
                   std::span<const int32_t> cu_k, AttentionShape shape, const TensorView& out,
                   const TensorView& lse = {});

    // DyLLM's column-sparse approximate attention (engine/README.md §a.7 step 6, kernels/README.md §b.1):
    //   c_new[i] = c_old[i] + sum_{j in S(b)} softmax_j'(q_i . k_j' / sqrt(D))[j] * dv[s(j)]
    // where the softmax normaliser runs over ALL keys j' of sequence b = q_seq[i], and the sum over the salient keys of
    // b only: sal_k[cu_sal[b] .. cu_sal[b+1]) are their packed key rows (ascending), dv the matching rows of dv.
    // q: [nq, H_q*D]; k: [nk, H_kv*D]; dv: [ns, H_kv*D]; c_old: [nq, H_q*D]; c_new: [nq, H_q*D] F32.
    void attention_approx(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k,
                          const TensorView& dv, std::span<const int32_t> sal_k, std::span<const int32_t> cu_sal,
                          std::span<const int32_t> cu_k, const TensorView& c_old, AttentionShape shape,
                          const TensorView& c_new);

    // attention_approx, except that the query rows exact (ascending indices into q's rows) get attention()'s output
    // against v (the full, updated V cache, [nk, H_kv*D] like k) instead, bit for bit: one pass over the keys serves
    // both, as DyLLM's step 5-6 do (the salient rows' scores are computed for the approximation anyway). Only on a
    // backend whose fuses_exact_rows() is true.
    void attention_approx_exact(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k,
                                const TensorView& v, const TensorView& dv, std::span<const int32_t> sal_k,
                                std::span<const int32_t> cu_sal, std::span<const int32_t> cu_k,
                                std::span<const int32_t> exact, const TensorView& c_old, AttentionShape shape,
                                const TensorView& c_new);

    // The column-sparse update (engine/README.md decision 12): only the salient keys' scores, against the log-sum-exp
    // each row had at its last exact attention (lse: [nq, H_q] F32, from attention()); O(nq |S| D) instead of
    // O(nq n_keys D). Operands as attention_approx. Plain (k_old empty), the paper's text:
    //   c_new[i] = c_old[i] + sum_{j in S(b)} exp(q_i . k_j / sqrt(D) - lse[i]) * dv[s(j)]
    // Incremental (k_old, v_old: [ns, H_kv*D] the salient keys' K and V before this step's update): their old softmax
    // terms are replaced by the new ones and the context renormalised, lse_out ([nq, H_q] F32, may alias lse) gets the
    // updated log-sum-exp; exact when q is unchanged. A (row, head) whose unchanged keys held under
    // kernels/cpu/ref/attention_cols.h's kColsMinRestMass of its softmax mass keeps c_old and gets lse_out NaN: the
    // caller recomputes that row exactly. A row with lse -inf (no keys) keeps c_old.
    void attention_cols(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k, const TensorView& dv,
                        std::span<const int32_t> sal_k, std::span<const int32_t> cu_sal, std::span<const int32_t> cu_k,
                        const TensorView& lse, const TensorView& c_old, AttentionShape shape, const TensorView& c_new,
                        const TensorView& k_old = {}, const TensorView& v_old = {}, const TensorView& lse_out = {});

    // dst[i, :] = src[idx[i], :]  (dst: [idx.size(), w]);  dst[idx[i], :] = src[i, :]  (src: [idx.size(), w]).
    void gather_rows(const TensorView& src, std::span<const int32_t> idx, const TensorView& dst);
    void scatter_rows(const TensorView& src, std::span<const int32_t> idx, const TensorView& dst);
    // y[i, :] += src[idx[i], :] (y: [idx.size(), w] F32; src: [rows, w] F32 or a cache dtype, widened): bit-identical
    // to gather_rows into F32 then add, without the gathered copy (DyLLM's cached FFN rows into the residual).
    void add_rows(const TensorView& src, std::span<const int32_t> idx, const TensorView& y);

    // Per-row cosine similarity over all columns, fp32 stats, squared norms clamped at 1e-8 (kernels/README.md §f.7).
    // a, b: [n, w]; cos_out: n host floats.
    void cosine_rows(const TensorView& a, const TensorView& b, std::span<float> cos_out);

    // Greedy scoring of logit rows: token = argmax (lowest id on ties) over ids not in `banned`, score per ScoreKind,
    // the softmax taken over every id, banned ones included (engine/README.md decision 11). logits: [n, n_vocab] F32;
    // tokens_out, scores_out: n host values.
    void score_logits(const TensorView& logits, ScoreKind kind, std::span<const int32_t> banned,
                      std::span<int32_t> tokens_out, std::span<float> scores_out);

protected:
    // ---- op implementations ---------------------------------------------------------------------------------------
    // Called by the public ops above once engine/backend_checks.cpp has validated the arguments: shapes, dtypes
    // (through supports()), layouts on device(), index ranges, sequence offsets and salient-key order. An
    // implementation checks nothing of that again.
    virtual void do_embed(const TensorView& table, std::span<const int32_t> ids, const TensorView& out)           = 0;
    virtual void do_matmul(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& y) = 0;
    virtual void do_rms_norm(const TensorView& x, const TensorView& w, float eps, const TensorView& y)            = 0;
    virtual void do_rope(const TensorView& x, std::span<const int32_t> positions, int n_head, int head_dim,
                         float theta)                                                                             = 0;
    virtual void do_add(const TensorView& a, const TensorView& b, const TensorView& y)                            = 0;
    virtual void do_sub(const TensorView& a, const TensorView& b, const TensorView& y)                            = 0;
    virtual void do_silu_mul(const TensorView& gate, const TensorView& up, const TensorView& y)                   = 0;
    virtual void do_copy(const TensorView& src, const TensorView& dst)                                            = 0;
    virtual void do_attention(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k,
                              const TensorView& v, std::span<const int32_t> cu_k, AttentionShape shape,
                              const TensorView& out, const TensorView& lse)                                       = 0;
    virtual void do_attention_approx(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k,
                                     const TensorView& dv, std::span<const int32_t> sal_k,
                                     std::span<const int32_t> cu_sal, std::span<const int32_t> cu_k,
                                     const TensorView& c_old, AttentionShape shape, const TensorView& c_new)      = 0;
    // Only called where fuses_exact_rows() is true.
    virtual void do_attention_approx_exact(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k,
                                           const TensorView& v, const TensorView& dv, std::span<const int32_t> sal_k,
                                           std::span<const int32_t> cu_sal, std::span<const int32_t> cu_k,
                                           std::span<const int32_t> exact, const TensorView& c_old,
                                           AttentionShape shape, const TensorView& c_new);
    virtual void do_attention_cols(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k,
                                   const TensorView& dv, std::span<const int32_t> sal_k,
                                   std::span<const int32_t> cu_sal, const TensorView& lse, const TensorView& c_old,
                                   AttentionShape shape, const TensorView& c_new, const TensorView& k_old,
                                   const TensorView& v_old, const TensorView& lse_out)                       = 0;
    virtual void do_gather_rows(const TensorView& src, std::span<const int32_t> idx, const TensorView& dst)  = 0;
    virtual void do_scatter_rows(const TensorView& src, std::span<const int32_t> idx, const TensorView& dst) = 0;
    virtual void do_add_rows(const TensorView& src, std::span<const int32_t> idx, const TensorView& y)       = 0;
    virtual void do_cosine_rows(const TensorView& a, const TensorView& b, std::span<float> cos_out)          = 0;
    virtual void do_score_logits(const TensorView& logits, ScoreKind kind, std::span<const int32_t> banned,
                                 std::span<int32_t> tokens_out, std::span<float> scores_out)                 = 0;
};

// Creates a backend. Cpu always works; Cuda throws BackendError naming the reason ("CUDA backend not compiled in
// (DYLLM_CUDA=OFF)", "no CUDA device: cudaErrorInsufficientDriver"). Auto picks CUDA when a device is present, else
// the CPU, and puts the one-line reason in *fallback_reason.
std::unique_ptr<Backend> make_backend(BackendKind kind, int n_threads = 0, std::string* fallback_reason = nullptr);

// Number of usable CUDA devices; 0 without a driver or a device, and when CUDA is not compiled in. Never throws.
int cuda_device_count(std::string* why_none = nullptr);

}  // namespace dyllm
