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
#include "engine/tensor.h"

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

// Which matmul the probe times: the weights prepared as a model's are (the rate the engine's own products can reach),
// or left as plain tensors, so the backend runs its unprepared matmul (on the CPU, one single-threaded call of the
// system BLAS's cblas_sgemm per pool slice: the rate a program that calls the BLAS gets, the usual reference for a
// dense step; below oneDNN's packed matmul on AVX-512 cores, `dyllm bench` prints both).
enum class ProbeWeights { Prepared, Plain };

// The shapes' operands, allocated (and prepared) once, so that the rate can be measured again and again: `dyllm bench`
// re-measures it between repetitions, because on a shared machine the rate moves by tens of percent within a minute
// and a share of a rate measured minutes earlier can read 70% or 120% for the same code.
class GemmProbe {
public:
    // Throws InputError for an empty shape.
    GemmProbe(Backend& be, std::span<const GemmShape> shapes, ProbeWeights weights = ProbeWeights::Prepared);
    ~GemmProbe();  // releases the prepared weights before their host copies go
    GemmProbe(const GemmProbe&)            = delete;
    GemmProbe& operator=(const GemmProbe&) = delete;

    // Times each shape: calls until min_seconds_per_shape has passed and at least min_calls ran; the median call, so
    // a preempted call does not set the rate. The first measure() also makes one untimed warm-up call per shape
    // (primitive creation, thread start, first touch).
    SgemmProbe measure(double min_seconds_per_shape, int min_calls = 3);

private:
    struct Operands {
        GemmShape  shape;
        Tensor     x, w, y;
        TensorView w_prepared;  // w itself with ProbeWeights::Plain
    };
    Backend&              be_;
    std::vector<Operands> ops_;
    bool                  prepared_;
    bool                  warm_ = false;
};

// One GemmProbe, measured once.
SgemmProbe measure_sgemm(Backend& be, std::span<const GemmShape> shapes, double min_seconds_per_shape);

// What a CPU backend's threads add to the probe right now: its rate on `threads` threads against one thread. On a
// 2-core VM two threads can run it 1.8-1.9x as fast one hour and 1.05-1.1x the next (each vCPU alone at full rate:
// the host put them on one physical core's two hyperthreads, or is busy), with every multi-thread figure of the bench
// moving with it: the bench prints the verdict beside its figures.
struct ThreadScaling {
    int    threads           = 1;
    double one_thread_gflops = 0, gflops = 0;
    double speedup() const { return one_thread_gflops > 0 ? gflops / one_thread_gflops : 0.0; }
    // Less than 0.65 of linear (1.3x on 2 threads): the threads share cores. Between the VM's two states above.
    bool shared_cores() const { return threads > 1 && one_thread_gflops > 0 && speedup() < 0.65 * threads; }
};

}  // namespace dyllm::app
