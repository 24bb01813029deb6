// CUDA kernel outputs that no Backend op exposes, called through their kernels/cuda entries: the approximate
// attention's fused cosine statistics against cosine_rows over the same rows.
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cuda/cuda_test_util.h"
#include "kernels/common/attention_approx_math.h"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/attention_approx.cuh"
#include "kernels/cuda/cosine_rows.cuh"
#include "kernels/cuda/cuda_check.cuh"

using namespace dyllm;

namespace {

// A device copy of a host vector, freed on scope exit.
template <class T>
struct DeviceVec {
    T*     ptr = nullptr;
    size_t n   = 0;
    explicit DeviceVec(const std::vector<T>& h) : n(h.size()) {
        allocate();
        if (n) CUDA_CHECK(cudaMemcpy(ptr, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    }
    explicit DeviceVec(size_t count) : n(count) {
        allocate();
        CUDA_CHECK(cudaMemset(ptr, 0, std::max<size_t>(1, n) * sizeof(T)));
    }
    ~DeviceVec() { (void)cudaFree(ptr); }
    void allocate() {
        void* p = nullptr;
        CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(1, n) * sizeof(T)));
        ptr = static_cast<T*>(p);
    }
    DeviceVec(const DeviceVec&)                = delete;
    DeviceVec&     operator=(const DeviceVec&) = delete;
    std::vector<T> get() const {
        std::vector<T> h(n);
        if (n) CUDA_CHECK(cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost));
        return h;
    }
};

cuda::Mat f32_mat(float* p, int64_t rows, int64_t cols) {
    return cuda::Mat{p, cuda::ElemType::F32, rows, cols, cols};
}

}  // namespace

TEST_CASE("approximate attention's fused cosine statistics equal cosine_rows of (c_new, c_old)", "[cuda][approx]") {
    const cuda::AttnDims       dims{8, 2, 64};
    const std::vector<int32_t> cu_k = {0, 70, 100};
    const std::vector<int32_t> sal  = {3, 64, 69, 71, 99};
    const std::vector<int32_t> cu_s = {0, 3, 5};
    std::vector<int32_t>       q_seq;
    for (int b = 0; b < 2; ++b)
        for (int j = cu_k[size_t(b)]; j < cu_k[size_t(b) + 1]; ++j) q_seq.push_back(b);
    const int64_t    nq = int64_t(q_seq.size()), nk = cu_k.back(), ns = int64_t(sal.size());
    const int64_t    qd = dims.n_head * dims.head_dim, kvd = dims.n_kv_head * dims.head_dim;
    DeviceVec<float> q(cuda_test::random_values(size_t(nq * qd), 1)), k(cuda_test::random_values(size_t(nk * kvd), 2)),
        dv(cuda_test::random_values(size_t(ns * kvd), 3, 0.1f)), c_old(cuda_test::random_values(size_t(nq * qd), 4)),
        c_new(static_cast<size_t>(nq * qd)), stats(static_cast<size_t>(nq * 3)), cosines(static_cast<size_t>(nq)),
        stats_ref(static_cast<size_t>(nq * 3));
    const KeyTileMasks   m     = build_key_tile_masks(sal.data(), cu_s.data(), cu_k.data(), 2);
    const auto           tiles = plan_query_tiles(q_seq.data(), nq, 2, cuda::attention_tile_rows(dims));
    DeviceVec<QueryTile> d_tiles(tiles);
    DeviceVec<int32_t>   d_cu(cu_k), d_base(m.base), d_off(m.tile_off);
    DeviceVec<uint64_t>  d_mask(m.mask);
    CUDA_CHECK(cuda::attention_approx(f32_mat(q.ptr, nq, qd), f32_mat(k.ptr, nk, kvd), f32_mat(dv.ptr, ns, kvd),
                                      d_cu.ptr, d_tiles.ptr, int(tiles.size()), d_mask.ptr, d_base.ptr, d_off.ptr,
                                      f32_mat(c_old.ptr, nq, qd), dims, f32_mat(c_new.ptr, nq, qd), stats.ptr,
                                      nullptr));
    CUDA_CHECK(
        cuda::cosine_rows(f32_mat(c_new.ptr, nq, qd), f32_mat(c_old.ptr, nq, qd), cosines.ptr, stats_ref.ptr, nullptr));
    CUDA_CHECK(cudaDeviceSynchronize());
    const auto got = stats.get(), want = stats_ref.get();
    // Same fp32 terms summed in two orders (per head, then atomics over heads): n 2^-24 relative of the sum of |terms|
    // (<= |new||old| by Cauchy-Schwarz for the dot), with n = 512 columns.
    cuda_test::check_close("fused_stats", got, want, [&](size_t e) {
        const size_t r = e / 3;
        return 4.0 * 512 * 5.96e-8 * std::sqrt(double(want[3 * r + 1]) * double(want[3 * r + 2])) + 1e-6;
    });
}
