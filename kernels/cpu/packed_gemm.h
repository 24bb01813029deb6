// y = x W^T + b with W packed ONCE into a GEMM provider's own blocked layout (oneDNN's matmul when the build found
// libdnnl-dev, kernels/README.md "GEMM provider"): no per-call widening or packing of the weight, and the engine's
// thread pool, not the provider, runs the threads (each task multiplies one column slice single-threaded).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/cpu/mat.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm::cpu {

// Output columns (W rows) per slice, at least: slices are the units the pool hands out, and a slice narrower than
// this runs the provider's micro-kernel on too few columns to pay for its hand-out (tests/bench/bench_gemm_providers).
constexpr int64_t kPackedSliceMinCols = 128;
// A weight with fewer output columns than this is packed whole, and a product with it splits over the pool by rows of
// x, in chunks of at least kPackedRowChunkMin rows (brgemm's row block). On tiny-llada (W [128..374, 128]) column
// slices would leave a dense step's q/k/v/o/down products one slice each, never split at 2 threads, and run a sparse
// step's few-row products as two primitives plus a copy instead of one.
constexpr int64_t kPackedWholeBelowRows = 4 * kPackedSliceMinCols;
constexpr int64_t kPackedRowChunkMin    = 16;
// Below this many flops (2 n m k) a product runs on the calling thread only: a hand-out to a polling worker costs ~1 us
// (thread_pool.h kPoolSpinNs), so from ~10 us of work (1 MFLOP at ~100 GFLOP/s) two slices pay. Splitting the small
// products of a cached step also keeps the worker polling between attention calls instead of asleep (a wake-up from
// sleep costs 50-150 us on a VM; with 4 MFLOP here, tiny-llada's split attention runs 3x slower at 2 threads).
constexpr double kPackedParallelFlops = 1e6;
// A product of a few rows (small_gemm.h) streams its weight for 2-16 flops per byte, so it pays for a hand-out from
// a smaller weight than kPackedParallelFlops says: its outputs are split over the pool from this size (each thread
// then pulls half the weight from L3 into its own L2). tests/bench/bench_small_split.cpp, 2-core AVX2 EPYC, cold
// weights, 1-8 rows, one thread / split over two (medians of 600 alternating calls, three runs): [128, 128] (64 KiB)
// 0.93-1.24, a wash; [344, 128] and [128, 344] (172 KiB, tiny-llada's FFN) 1.20-1.67; [256, 256] 1.34-1.48.
constexpr double kSmallSplitWeightBytes = 128.0 * 1024;
// A product of up to 256 rows runs with its row count padded to a multiple of 16 (a primitive a run builds once per
// shape) unless the padding rows would cost more flops than this, about one primitive build (0.3-0.7 ms); then with its
// exact count (packed_gemm_dnnl.cpp, primitive_rows).
constexpr double kPadWasteFlops = 2.5e7;

// A weight [m, k] in the provider's layout, cut into column slices of the output (row ranges of W).
class PackedWeight {
public:
    struct Impl;
    explicit PackedWeight(std::unique_ptr<Impl> impl);
    ~PackedWeight();
    int64_t     rows() const;  // m
    int64_t     cols() const;  // k
    ElemType    type() const;  // the stored type the weight was packed from (the GEMM runs in it)
    int         slices() const;
    size_t      bytes() const;  // memory held by the packed copy
    const Impl& impl() const { return *impl_; }

private:
    std::unique_ptr<Impl> impl_;
};

class PackedGemm {
public:
    // n_threads: the size of the pool that will run pack() and matmul(); it sets how many slices a weight is cut into.
    explicit PackedGemm(int n_threads);
    ~PackedGemm();
    PackedGemm(const PackedGemm&)            = delete;
    PackedGemm& operator=(const PackedGemm&) = delete;

    // "oneDNN 2.6.3", or "" when the build has no provider (then supports() is false for every type).
    static std::string provider();
    // The weight types pack() takes on this CPU: F32 (fp32 math, as exact as sgemm) with oneDNN, and BF16 (bf16
    // products, fp32 accumulation) where oneDNN has a bf16 matmul (AVX-512 CPUs; not AVX2 ones). F16 never: oneDNN
    // 2.6 has no f16 matmul on CPUs without AVX512-FP16. A type it does not take runs on matmul.h, which widens the
    // stored weight a panel at a time (its memory stays the checkpoint's).
    static bool supports(ElemType t);

    // True where oneDNN's f32 matmul on this CPU is its generic jit sgemm (AVX2 CPUs), whose rounding of a row
    // depends on how many rows the product has: every product of a small weight then runs on small_gemm, whatever its
    // row count, so that a row comes out the same alone, in a lock-step batch or in a padded primitive. False with
    // oneDNN's brgemm (AVX-512 CPUs), whose rows do not depend on the row count (tests/unit/test_packed_gemm.cpp).
    static bool small_gemm_for_all_rows();

    // Packs w: [m, k] (any row stride) into a new buffer, one slice per pool task. Returns nullptr and sets *error
    // (one line) when the provider refuses it (unsupported type, out of memory).
    std::shared_ptr<const PackedWeight> pack(ConstMat w, ThreadPool& pool, std::string* error) const;

    // x: [n, k] fp32; w: packed [m, k]; bias: [1, m] (any type) or bias.data == nullptr; y: [n, m] fp32 (any row
    // stride, not aliasing x). BF16 weights multiply x rounded to bf16 (round-to-nearest-even, like the CUDA
    // backend's GEMM inputs, kernels/README.md §f.10) with fp32 accumulation; F32 weights multiply x as is.
    void matmul(CMatF x, const PackedWeight& w, ConstMat bias, MatF y, ThreadPool& pool) const;

    // Matmul primitives built so far, one per (type, row count, slice width, k) met (each a 0.3-0.7 ms JIT build).
    size_t primitives() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace dyllm::cpu
