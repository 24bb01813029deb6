// The machine's fp32 GEMM rate on a model's own GEMM shapes, measured through a backend's matmul op on weights
// prepared as a model's are (the CPU: oneDNN's packed matmul where built, else OpenBLAS sgemm): the peak that
// `dyllm bench` (and the studio's Time panel) report achieved GFLOP/s against.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/io/config.h"

namespace dyllm::app {

// y[m, n] = x[m, k] W[n, k]^T: 2 m n k FLOPs.
struct GemmShape {
    std::string name;
    int64_t     m = 0, n = 0, k = 0;
    double      flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

// The dense step's big GEMMs for `rows` rows: the q projection (n_embd -> q_dim), the FFN up (n_embd -> n_ff) and the
// FFN down (n_ff -> n_embd) projections.
std::vector<GemmShape> model_gemm_shapes(const ModelConfig& cfg, int64_t rows);

struct GemmRate {
    GemmShape shape;
    double    seconds = 0;  // median time of one call
    double    gflops_per_s() const { return seconds > 0 ? shape.flops() / seconds * 1e-9 : 0.0; }
};

struct SgemmProbe {
    std::vector<GemmRate> shapes;
    double gflops_per_s = 0;  // all shapes' FLOPs over the sum of their median times (one pass over every shape)
};

// Times F32 matmuls of each shape on `be` (one warm-up call, then calls until min_seconds_per_shape has passed, at
// least 3): the median call, so a preempted call does not set the rate. Throws InputError for an empty shape.
SgemmProbe measure_sgemm(Backend& be, std::span<const GemmShape> shapes, double min_seconds_per_shape);

}  // namespace dyllm::app
