// Helpers of the CUDA tests: the CPU and CUDA backends, host <-> backend tensors of any float dtype, and an
// elementwise comparison that prints the first mismatches and dumps both tensors to test-failures/<case>.txt.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/backend_cuda.h"
#include "kernels/common/dtype_convert.h"
#include "support/dtype_bytes.h"

namespace dyllm::cuda_test {

struct Backends {
    std::unique_ptr<Backend> cpu;
    std::unique_ptr<Backend> gpu;
};

// Created once per process (the CUDA context and cuBLAS handle are expensive).
inline Backends& backends() {
    static Backends b{make_backend(BackendKind::Cpu, 2), make_cuda_backend(0)};
    return b;
}

inline std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937                    rng(seed);
    std::normal_distribution<float> g(0.0f, scale);
    std::vector<float>              v(n);
    for (float& x : v) x = g(rng);
    return v;
}

// Values as stored in dtype and widened back (what both backends see after an upload of that dtype).
inline std::vector<float> quantize(const std::vector<float>& v, DType dt) {
    std::vector<float> r(v);
    for (float& x : r) x = dt == DType::BF16 ? round_to_bf16(x) : dt == DType::F16 ? f16_to_f32(f32_to_f16(x)) : x;
    return r;
}

using test::decode;
using test::encode;

// A [rows, cols] tensor of dtype on backend be holding v (rounded to dtype); the values a tensor holds.
inline Tensor make_tensor(Backend& be, DType dt, int64_t rows, int64_t cols, const std::vector<float>& v) {
    REQUIRE(v.size() == size_t(rows * cols));
    return test::upload_values(be, dt, rows, cols, v);
}
inline std::vector<float> fetch(Backend& be, const TensorView& t) {
    return test::download_values(be, t);
}

// |got - ref| <= tol(i) for every element. Prints the first 5 mismatches, stops counting details after 10, and on
// failure writes both tensors to test-failures/<name>.txt.
inline void check_close(const std::string& name, const std::vector<float>& got, const std::vector<float>& ref,
                        const std::function<double(size_t)>& tol) {
    REQUIRE(got.size() == ref.size());
    size_t      bad = 0;
    std::string first;
    for (size_t i = 0; i < got.size(); ++i) {
        const double d = std::fabs(double(got[i]) - double(ref[i]));
        if (!(d <= tol(i))) {  // NaN counts as a mismatch
            if (bad < 5)
                first += "  [" + std::to_string(i) + "] cuda " + std::to_string(got[i]) + " cpu " +
                         std::to_string(ref[i]) + " |diff| " + std::to_string(d) + " > tol " + std::to_string(tol(i)) +
                         "\n";
            if (++bad >= 10) break;
        }
    }
    if (bad) {
        std::filesystem::create_directories("test-failures");
        std::ofstream f("test-failures/" + name + ".txt");
        for (size_t i = 0; i < got.size(); ++i) f << i << ' ' << got[i] << ' ' << ref[i] << '\n';
    }
    INFO(name << ": " << (bad >= 10 ? "10+" : std::to_string(bad)) << " mismatches\n" << first);
    CHECK(bad == 0);
}

}  // namespace dyllm::cuda_test
