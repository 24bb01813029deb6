// Timed F32 matmuls through a backend (app/model/sgemm_probe.h).
#include "app/model/sgemm_probe.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "engine/errors.h"
#include "engine/tensor.h"

namespace dyllm::app {

std::vector<GemmShape> model_gemm_shapes(const ModelConfig& cfg, int64_t rows) {
    return {{"q proj", rows, cfg.q_dim(), cfg.n_embd},
            {"ffn up", rows, cfg.n_ff, cfg.n_embd},
            {"ffn down", rows, cfg.n_embd, cfg.n_ff}};
}

namespace {

Tensor filled(Backend& be, int64_t rows, int64_t cols) {
    Tensor t = be.alloc(DType::F32, rows, cols);
    // Small values of both signs: no denormals, no overflow (speed must not depend on the data).
    std::vector<float> host(size_t(rows * cols));
    for (size_t i = 0; i < host.size(); ++i) host[i] = float(int(i % 17) - 8) * 0.01f;
    be.upload(t, host.data());
    return t;
}

}  // namespace

SgemmProbe measure_sgemm(Backend& be, std::span<const GemmShape> shapes, double min_seconds_per_shape) {
    using clock = std::chrono::steady_clock;
    SgemmProbe out;
    double     total_flops = 0, total_s = 0;
    for (const GemmShape& s : shapes) {
        if (s.m <= 0 || s.n <= 0 || s.k <= 0)
            throw InputError("sgemm probe: shape '" + s.name + "' has a zero or negative size");
        const Tensor x = filled(be, s.m, s.k), w = filled(be, s.n, s.k), y = be.alloc(DType::F32, s.m, s.n);
        // Prepared like a model's weight, so the probe times the GEMM the engine runs (the CPU's packed oneDNN
        // matmul), not OpenBLAS, which a CPU it does not know can leave on SSE3 kernels.
        const TensorView wv = be.prepare_weight(w.view(), "gemm probe " + s.name);
        be.matmul(x, wv, TensorView{}, y);  // warm-up: primitive creation, thread start, first touch
        be.synchronize();
        std::vector<double> times;
        const auto          start = clock::now();
        while (times.size() < 3 || std::chrono::duration<double>(clock::now() - start).count() < min_seconds_per_shape) {
            const auto t0 = clock::now();
            be.matmul(x, wv, TensorView{}, y);
            be.synchronize();
            times.push_back(std::chrono::duration<double>(clock::now() - t0).count());
        }
        be.release_weight(w.view());  // before w is freed (engine/backend.h)
        std::nth_element(times.begin(), times.begin() + long(times.size() / 2), times.end());
        GemmRate r{s, times[times.size() / 2]};
        total_flops += s.flops();
        total_s += r.seconds;
        out.shapes.push_back(r);
    }
    out.gflops_per_s = total_s > 0 ? total_flops / total_s * 1e-9 : 0.0;
    return out;
}

}  // namespace dyllm::app
