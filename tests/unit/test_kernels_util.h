// Helpers for the kernel and CPU-backend tests: seeded random data, 16-bit weight storage, and an element-wise
// |a - b| <= atol + rtol * |ref| check that prints the first mismatches and dumps both tensors on failure.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/common/dtype_convert.h"
#include "kernels/cpu/mat.h"

namespace dyllm::test {

// Uniform values in [lo, hi) from a fixed seed.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937                          rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float>                    v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

// A weight matrix stored as F32, F16 or BF16, with the fp32 values it really holds (after rounding).
struct StoredMat {
    cpu::ElemType         type = cpu::ElemType::F32;
    int64_t               rows = 0, cols = 0;
    std::vector<float>    f32;    // storage when type == F32
    std::vector<uint16_t> h16;    // storage when 16-bit
    std::vector<float>    exact;  // the stored values widened to fp32

    const void* data() const { return type == cpu::ElemType::F32 ? static_cast<const void*>(f32.data()) : h16.data(); }
    cpu::ConstMat mat() const { return cpu::ConstMat{data(), type, rows, cols, cols}; }
};

inline StoredMat make_stored(cpu::ElemType t, int64_t rows, int64_t cols, uint32_t seed, float scale = 1.0f) {
    StoredMat m;
    m.type  = t;
    m.rows  = rows;
    m.cols  = cols;
    m.f32   = random_floats(size_t(rows * cols), seed, -scale, scale);
    m.exact = m.f32;
    if (t != cpu::ElemType::F32) {
        m.h16.resize(m.f32.size());
        for (size_t i = 0; i < m.f32.size(); ++i) {
            m.h16[i]   = t == cpu::ElemType::BF16 ? f32_to_bf16(m.f32[i]) : f32_to_f16(m.f32[i]);
            m.exact[i] = t == cpu::ElemType::BF16 ? bf16_to_f32(m.h16[i]) : f16_to_f32(m.h16[i]);
        }
        m.f32.clear();
    }
    return m;
}

inline const char* elem_name(cpu::ElemType t) {
    return t == cpu::ElemType::F32 ? "F32" : t == cpu::ElemType::F16 ? "F16" : "BF16";
}

// Compares got against ref element by element. On failure prints the first 5 mismatches (stops counting detail
// after 10) and writes both tensors to test-failures/<name>.txt in the working directory.
inline bool all_close(const std::string& name, const float* got, const float* ref, size_t n, double atol, double rtol) {
    size_t             bad = 0;
    std::ostringstream msg;
    double             worst = 0.0;
    for (size_t i = 0; i < n; ++i) {
        const double err = std::fabs(double(got[i]) - double(ref[i]));
        const double tol = atol + rtol * std::fabs(double(ref[i]));
        if (!(err <= tol)) {  // NaN fails too
            if (bad < 5)
                msg << "  [" << i << "] got " << got[i] << " ref " << ref[i] << " |err| " << err << " > " << tol
                    << "\n";
            ++bad;
        }
        if (err > worst) worst = err;
    }
    if (bad == 0) return true;
    std::ostringstream head;
    head << name << ": " << bad << " of " << n << " elements outside atol " << atol << " + rtol " << rtol
         << " (max |err| " << worst << ")\n";
    UNSCOPED_INFO(head.str() + msg.str());
    std::error_code ec;
    std::filesystem::create_directories("test-failures", ec);
    std::string fname = name;
    for (char& c : fname)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '_';
    std::ofstream f("test-failures/" + fname + ".txt");
    f << head.str() << "index got ref\n";
    for (size_t i = 0; i < n; ++i) f << i << ' ' << got[i] << ' ' << ref[i] << '\n';
    return false;
}

inline bool all_close(const std::string& name, const std::vector<float>& got, const std::vector<float>& ref,
                      double atol, double rtol) {
    REQUIRE(got.size() == ref.size());
    return all_close(name, got.data(), ref.data(), got.size(), atol, rtol);
}

// fp32 unit roundoff (2^-24; 2^-23 is the spacing at 1): the tolerances below are multiples of it.
constexpr double kU32 = 5.9604644775390625e-08;

}  // namespace dyllm::test
