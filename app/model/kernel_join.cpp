// Join of CUPTI kernel records to the step's engine ops (app/model/kernel_join.h).
#include "app/model/kernel_join.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace dyllm::app {

StepKernels join_step_kernels(const StepData& sd, std::span<const KernelRecord> kernels) {
    StepKernels                               out;
    std::map<std::pair<int32_t, int>, size_t> key_index;  // (layer, op class) -> out.ops
    auto                                      key_of = [&](int32_t layer, OpClass op) -> OpGpuTime& {
        auto [it, fresh] = key_index.try_emplace({layer, int(op)}, out.ops.size());
        if (fresh) out.ops.push_back(OpGpuTime{.layer = layer, .op = op});
        return out.ops[it->second];
    };
    for (const OpTiming& o : sd.ops) {
        OpGpuTime& k = key_of(o.layer, o.op);
        ++k.n_ops;
        k.host_s += double(o.dur_ns) * 1e-9;
    }
    const int64_t t0 = sd.t_begin_ns, t1 = sd.ended && sd.end.t_ns > 0 ? sd.end.t_ns : INT64_MAX;
    std::map<std::tuple<bool, int32_t, int, std::string, int>, size_t> row_index;
    for (const KernelRecord& r : kernels) {
        const bool attributed = r.external_id != 0;
        if (attributed ? r.step != sd.step : !(sd.begun && r.start_ns >= t0 && r.start_ns <= t1)) continue;
        const double  s     = double(std::max<int64_t>(r.end_ns - r.start_ns, 0)) * 1e-9;
        const OpClass op    = r.op < uint8_t(OpClass::Count) ? OpClass(r.op) : OpClass::Other;
        const int32_t layer = attributed ? r.layer : -1;
        if (attributed) {
            OpGpuTime& k = key_of(layer, op);
            ++k.n_kernels;
            k.gpu_s += s;
        }
        auto [it, fresh] = row_index.try_emplace({!attributed, layer, int(op), r.name, r.kind}, out.rows.size());
        if (fresh)
            out.rows.push_back(KernelRow{
                .name       = r.name,
                .kind       = r.kind,
                .layer      = layer,
                .op         = attributed ? op : OpClass::Other,
                .attributed = attributed,
            });
        KernelRow& row = out.rows[it->second];
        ++row.count;
        row.gpu_s += s;
        ++out.records;
        out.gpu_s += s;
    }
    std::stable_sort(out.rows.begin(), out.rows.end(),
                     [](const KernelRow& a, const KernelRow& b) { return a.gpu_s > b.gpu_s; });
    return out;
}

}  // namespace dyllm::app
