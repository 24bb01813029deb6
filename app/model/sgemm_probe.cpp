// Timed F32 matmuls through a backend (app/model/sgemm_probe.h).
#include "app/model/sgemm_probe.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "engine/errors.h"

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

GemmProbe::GemmProbe(Backend& be, std::span<const GemmShape> shapes, ProbeWeights weights)
    : be_(be), prepared_(weights == ProbeWeights::Prepared) {
    for (const GemmShape& s : shapes)
        if (s.m <= 0 || s.n <= 0 || s.k <= 0)
            throw InputError("sgemm probe: shape '" + s.name + "' has a zero or negative size");
    ops_.reserve(shapes.size());
    for (const GemmShape& s : shapes) {
        Operands o{s, filled(be, s.m, s.k), filled(be, s.n, s.k), be.alloc(DType::F32, s.m, s.n), {}};
        // Prepared like a model's weight, so the probe times the GEMM the engine runs (the CPU's packed oneDNN
        // matmul), not OpenBLAS, which a CPU it does not know can leave on SSE3 kernels; ProbeWeights::Plain times
        // OpenBLAS on purpose.
        o.w_prepared = prepared_ ? be.prepare_weight(o.w.view(), "gemm probe " + s.name) : o.w.view();
        ops_.push_back(std::move(o));
    }
}

GemmProbe::~GemmProbe() {
    if (prepared_)
        for (const Operands& o : ops_) be_.release_weight(o.w.view());  // before w is freed (engine/backend.h)
}

SgemmProbe GemmProbe::measure(double min_seconds_per_shape, int min_calls) {
    using clock = std::chrono::steady_clock;
    SgemmProbe out;
    double     total_flops = 0, total_s = 0;
    for (Operands& o : ops_) {
        if (!warm_) {
            be_.matmul(o.x, o.w_prepared, TensorView{}, o.y);
            be_.synchronize();
        }
        std::vector<double> times;
        const auto          start = clock::now();
        while (int(times.size()) < std::max(1, min_calls) ||
               std::chrono::duration<double>(clock::now() - start).count() < min_seconds_per_shape) {
            const auto t0 = clock::now();
            be_.matmul(o.x, o.w_prepared, TensorView{}, o.y);
            be_.synchronize();
            times.push_back(std::chrono::duration<double>(clock::now() - t0).count());
        }
        std::nth_element(times.begin(), times.begin() + long(times.size() / 2), times.end());
        GemmRate r{o.shape, times[times.size() / 2]};
        total_flops += o.shape.flops();
        total_s += r.seconds;
        out.shapes.push_back(r);
    }
    warm_            = true;
    out.gflops_per_s = total_s > 0 ? total_flops / total_s * 1e-9 : 0.0;
    return out;
}

SgemmProbe measure_sgemm(Backend& be, std::span<const GemmShape> shapes, double min_seconds_per_shape) {
    GemmProbe probe(be, shapes);
    return probe.measure(min_seconds_per_shape);
}

}  // namespace dyllm::app
