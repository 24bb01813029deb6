// GpuCapture: the GPU-side instrumentation that runs beside the engine on a CUDA backend - the CUPTI collector with
// its correlation sink, and NVTX ranges - started one way for `dyllm trace` and the studio's worker. It never throws:
// without CUPTI or a driver it says why in cupti_status() and the run goes on with engine ops only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "instrumentation/cupti_collector.h"
#include "instrumentation/kernel_record.h"
#include "instrumentation/nvtx_sink.h"

namespace dyllm {

class GpuCapture {
public:
    GpuCapture() = default;
    ~GpuCapture() { stop(); }
    GpuCapture(const GpuCapture&)            = delete;
    GpuCapture& operator=(const GpuCapture&) = delete;

    // cuda: the model runs on a CUDA backend (otherwise nothing starts); cupti: false for --no-cupti (NVTX only).
    void start(bool cuda, bool cupti);
    // Sinks to tee beside the caller's own: NVTX ranges and the CUPTI correlation ids (empty when nothing runs).
    std::vector<EventSink*> sinks();
    // "on", "off (cpu backend)", "off (--no-cupti)" or "CUPTI unavailable: <reason>".
    const std::string& cupti_status() const { return status_; }
    bool               collecting() const { return collector_.running(); }
    bool               nvtx_on() const { return nvtx_ && NvtxSink::compiled_in(); }
    // Records of everything launched so far, sorted by start (synchronises the device): call between steps, or
    // after stop() for the rest. Empty when CUPTI does not run.
    std::vector<KernelRecord> take_completed();
    void stop();  // stops CUPTI after a last flush (its records stay for take_completed); idempotent
    // The run's environment entries: cupti, cupti_records, cupti_dropped_records, cupti_callback_errors, nvtx.
    void add_env(std::vector<std::pair<std::string, std::string>>& env, size_t records) const;

private:
    CuptiCollector            collector_;
    CuptiCorrelationSink      correlation_{collector_};
    std::unique_ptr<NvtxSink> nvtx_;
    std::string               status_ = "off (cpu backend)";
};

}  // namespace dyllm
