// The CUDA backend's identity and memory helpers (alloc, upload, download). Its ops are tested by the op table
// (tests/unit/test_backend_ops.cpp, compiled into test_cuda by test_cuda_backend_ops.cpp) against kernels/cpu/ref.
#include <catch2/catch.hpp>

#include <algorithm>

#include "cuda/cuda_test_util.h"

using namespace dyllm;
using namespace dyllm::cuda_test;

TEST_CASE("cuda backend reports itself", "[cuda][backend]") {
    Backend& g = *backends().gpu;
    CHECK(std::string(g.name()) == "cuda");
    CHECK(g.device() == Device::Cuda);
    CHECK(g.cache_dtype() == DType::BF16);
    CHECK(g.description().rfind("cuda (", 0) == 0);
    CHECK(g.supports(OpKind::AttentionApprox, DType::BF16));
    CHECK_FALSE(g.supports(OpKind::Rope, DType::BF16));
}

TEST_CASE("alloc is zeroed; upload/download round trip", "[cuda][memory]") {
    Backend&      g    = *backends().gpu;
    const int64_t rows = GENERATE(0, 1, 7, 130), cols = GENERATE(1, 17, 300);
    const DType   dt   = GENERATE(DType::F32, DType::BF16, DType::F16);
    Tensor        t    = g.alloc(dt, rows, cols);
    const auto    zero = fetch(g, t.view());
    CHECK(std::all_of(zero.begin(), zero.end(), [](float x) { return x == 0.0f; }));
    const auto v = quantize(random_values(size_t(rows * cols), 1), dt);
    Tensor     u = make_tensor(g, dt, rows, cols, v);
    CHECK(fetch(g, u.view()) == v);
}
