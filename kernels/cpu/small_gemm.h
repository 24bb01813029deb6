// y = x W^T + b for a few rows of x (a DyLLM step's salient rows, a short block) against a narrow weight, without a
// GEMM library: W is kept once more in k-major order (column c of W^T contiguous over the outputs), so each weight
// vector loaded feeds one fused multiply-add per row of x, and nothing is packed, padded or built per call. oneDNN's
// matmul spends 3-9 us per call on its own bookkeeping at these sizes, more than the product itself (kernels/README.md
// "GEMM provider", small products).
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/cpu/mat.h"

namespace dyllm::cpu {

// Products with at most this many rows of x take small_gemm: one register tile of 8 rows x 32 outputs, so the weight
// is read once. More rows run as several tiles, each reading the weight again, and from 16 rows that lost to oneDNN
// on hidden-256 weights (fast-dual's 32-row blocks: 321 -> 255-281 tokens/s at 32; 8 rows: 331 -> 352).
constexpr int64_t kSmallGemmMaxRows = 8;
// Weights whose fp32 copy is at most this big get one (it stays in a core's L2 between the layers' products): every
// weight of the built-in models and of hidden-256 shapes, none of an 8B model's (whose memory must stay ~1x the
// checkpoint, and whose few-row products are bound by streaming the weight, not by a library's call overhead).
constexpr size_t kSmallGemmMaxWeightBytes = size_t(1) << 20;

// W [m, k] in k-major panels: W(o, c) at base()[(o / panel) * panel_stride + c * panel + o % panel], widened to fp32,
// the columns from m to the end of the last panel zero or ignored. Either its own copy (make_kmajor: panels of 16
// outputs, each a contiguous k x 64-byte strip, so a register tile's weights stream in order and sit in L1 without
// the set conflicts of a single panel of 128 or 256 outputs, a power-of-two row stride) or a view of the GEMM
// provider's packed weight when that is laid out so (oneDNN's f32 brgemm layout on AVX-512, BA16a64b: panels of 64
// outputs): a small model's weights then sit in memory, and in the caches, once. `type` is the stored type, which
// decides how x is rounded (below).
struct KMajorWeight {
    std::vector<float> own;             // the copy (empty for a view)
    const float*       view = nullptr;  // the provider's panels (a view)
    int64_t            m = 0, k = 0, panel = 0, panel_stride = 0;
    ElemType           type = ElemType::F32;
    const float*       base() const { return view ? view : own.data(); }
    // Where output o's k-major column starts (o's weights at column(o)[c * panel]).
    const float* column(int64_t o) const { return base() + (o / panel) * panel_stride + o % panel; }
    bool         empty() const { return m == 0; }
    size_t       bytes() const { return own.size() * sizeof(float); }  // memory held (a view holds none)
};

KMajorWeight make_kmajor(ConstMat w);
// A view of fp32 panels laid out as above (panel a multiple of 32); base must outlive it.
KMajorWeight kmajor_view(const float* base, int64_t m, int64_t k, int64_t panel, int64_t panel_stride);
// Outputs [o0, o1) of w as a weight of its own (a view of w's storage, which must outlive it); o0 a multiple of
// kmajor_slice_align(w), so the slice's 16-output vectors are w's. small_gemm on the slice gives exactly w's outputs.
int64_t      kmajor_slice_align(const KMajorWeight& w);
KMajorWeight kmajor_slice(const KMajorWeight& w, int64_t o0, int64_t o1);

// x: [n, k] fp32 (any n; PackedGemm sends it the products of <= kSmallGemmMaxRows rows); bias: m floats or nullptr; y:
// [n, m] (any row stride, not aliasing x). Each output is summed over c = 0..k-1 in order in fp32. A BF16 weight
// multiplies x rounded to bf16 (round to nearest even), as PackedGemm does, so a product's rounding does not depend on
// its row count.
void small_gemm(CMatF x, const KMajorWeight& w, const float* bias, MatF y);

}  // namespace dyllm::cpu
