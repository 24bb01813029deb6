// Per-step rates for the Time panel: GFLOP/s and the GB/s of weights streamed (the bytes of every GEMM's weight
// matrix read in the step, over the step's time). At a few dozen rows a step is bound by reading the weights
// (kernels/README.md "GEMM provider"), so weight GB/s against the machine's memory bandwidth says how close a step is
// to that floor.
#pragma once
#include <cstdint>

#include "app/model/op_names.h"
#include "app/model/run_history.h"

namespace dyllm::app {

// Bytes of a GEMM's weight matrix. The engine times a GEMM with bytes = W + x + y (engine/forward.cpp: matmul), where
// x [m, k] and y [m, n] are fp32 temporaries (Forward::alloc); the rest is W, whatever its dtype (f32, bf16, f16).
// 0 for an op that is not a GEMM or whose shape is unknown (no n_embd in the run's environment).
double gemm_weight_bytes(const OpTiming& o, const NamedOp& n);

struct StepRates {
    double seconds      = 0;  // the step's wall time (ended steps), else the sum of its op times so far
    double flops        = 0;  // StepEnd.flops (ended steps), else the sum of its ops' FLOPs
    double weight_bytes = 0;  // sum of gemm_weight_bytes over the step's ops
    int    gemms        = 0;  // GEMM ops with a known weight size
    double gflops_per_s() const { return seconds > 0 ? flops / seconds * 1e-9 : 0.0; }
    double weight_gbytes_per_s() const { return seconds > 0 ? weight_bytes / seconds * 1e-9 : 0.0; }
};

StepRates step_rates(const StepData& sd, int n_embd);

}  // namespace dyllm::app
