// Per-step GFLOP/s and weight GB/s (app/model/step_rates.h).
#include "app/model/step_rates.h"

#include <algorithm>

namespace dyllm::app {

double gemm_weight_bytes(const OpTiming& o, const NamedOp& n) {
    if (!n.is_gemm() || !(o.bytes > 0)) return 0.0;
    const double activations = 4.0 * double(n.m) * double(n.k + n.n);  // fp32 x [m, k] and y [m, n]
    return std::max(0.0, o.bytes - activations);
}

StepRates step_rates(const StepData& sd, int n_embd) {
    StepRates  r;
    double     op_s = 0, op_flops = 0;
    const auto names = name_ops(sd.ops, n_embd);
    for (size_t i = 0; i < sd.ops.size(); ++i) {
        const OpTiming& o = sd.ops[i];
        op_s += double(o.dur_ns) * 1e-9;
        op_flops += o.flops;
        const double w = gemm_weight_bytes(o, names[i]);
        if (w > 0) {
            r.weight_bytes += w;
            ++r.gemms;
        }
    }
    r.seconds = sd.ended && sd.end.wall_ns > 0 ? sd.wall_seconds() : op_s;
    r.flops   = sd.ended && sd.end.flops > 0 ? sd.end.flops : op_flops;
    return r;
}

}  // namespace dyllm::app
