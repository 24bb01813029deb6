// CUPTI kernel records joined to the engine ops that launched them, the way `dyllm trace` labels them: the external
// correlation id carries (step, layer, op class), so a kernel belongs to the step's ops of that key (q, k and v of a
// layer share one key). Per key the panel shows the ops' host time beside their kernels' GPU time.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "app/model/run_history.h"
#include "instrumentation/kernel_record.h"

namespace dyllm::app {

// One kernel (or memcpy/memset) name under one op key, summed over its launches in the step.
struct KernelRow {
    std::string name;
    int         kind       = 0;  // KernelKind
    int32_t     layer      = -1;
    OpClass     op         = OpClass::Other;
    bool        attributed = true;  // false: launched outside every engine op (external id 0)
    int         count      = 0;
    double      gpu_s      = 0;
};

// One op key of the step: the engine ops (host-timed) and the GPU work they launched.
struct OpGpuTime {
    int32_t layer     = -1;
    OpClass op        = OpClass::Other;
    int     n_ops     = 0;  // ops of this key in the step (0: kernels whose op event is missing, e.g. dropped)
    double  host_s    = 0;  // their summed host times (launch time on an asynchronous backend)
    int     n_kernels = 0;
    double  gpu_s     = 0;  // summed GPU time of their kernels
};

struct StepKernels {
    std::vector<KernelRow> rows;         // by GPU time, largest first
    std::vector<OpGpuTime> ops;          // keys with kernels or ops, in the order of the step's first op of each key
    int                    records = 0;  // kernel records joined to this step
    double                 gpu_s   = 0;
};

// The records of step sd.step (by their decoded external id), plus the unattributed ones that started inside the
// step's time span [t_begin_ns, StepEnd.t_ns] (the worker synchronises the device before it reads them).
StepKernels join_step_kernels(const StepData& sd, std::span<const KernelRecord> kernels);

}  // namespace dyllm::app
