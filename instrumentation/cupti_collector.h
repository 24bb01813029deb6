// CuptiCollector: GPU kernel, memcpy and memset times from the CUPTI activity API, mapped to the engine op that
// launched them through external correlation ids pushed by CuptiCorrelationSink. Without CUPTI (DYLLM_CUPTI=OFF) or
// without a usable driver it reports "CUPTI unavailable: <reason>" and collects nothing; it never throws or crashes.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "instrumentation/events.h"
#include "instrumentation/kernel_record.h"

namespace dyllm {

// One collector may run at a time per process (CUPTI's buffer callbacks are process-global).
class CuptiCollector {
public:
    CuptiCollector() = default;
    ~CuptiCollector();  // stops if running
    CuptiCollector(const CuptiCollector&)            = delete;
    CuptiCollector& operator=(const CuptiCollector&) = delete;

    // Built with CUPTI and a CUDA device visible? On false, *why (if given) says "CUPTI unavailable: <reason>".
    static bool available(std::string* why);

    // Registers the buffer callbacks, makes CUPTI time activities on std::chrono::steady_clock (the clock of
    // OpTiming) and enables CONCURRENT_KERNEL, MEMCPY, MEMSET and EXTERNAL_CORRELATION records. On failure nothing
    // stays enabled and *error says "CUPTI unavailable: <call> failed: <CUPTI error>".
    bool start(std::string* error);
    // Synchronises the device, flushes every buffer (forced) and disables the activity kinds. Idempotent.
    void stop();
    // Synchronises the device and flushes every buffer (forced) while collection goes on, so take() returns the
    // records of everything launched so far (the studio reads them between steps). Nothing when not running.
    void flush();
    bool running() const { return running_; }

    // Records delivered so far (call after stop() for a complete set), sorted by start time, with step/layer/op
    // decoded from the external id and kernel names demangled. Moves them out.
    std::vector<KernelRecord> take();
    // Records CUPTI could not store (no buffer space), summed over the run.
    uint64_t dropped_records() const;
    // Failures inside the CUPTI callbacks (allocation, record iteration): counted there, never thrown.
    uint64_t callback_errors() const;

private:
    bool running_ = false;
};

// EventSink adapter: pushes an external correlation id (encode_external_id(step, layer, op)) around every engine op
// so the kernels the op launches can be attributed to it. Compose it with other sinks through TeeSink. Does nothing
// while the collector is not running.
class CuptiCorrelationSink : public EventSink {
public:
    explicit CuptiCorrelationSink(const CuptiCollector& collector) : collector_(collector) {}
    void on_op_begin(int32_t step, int32_t layer, OpClass op) override;
    void on_op(const OpTiming& e) override;
    bool wants_cosines() const override { return false; }
    bool wants_op_timings() const override { return collector_.running(); }
    // Ids pushed and not yet popped (0 after balanced op begin/end pairs).
    int64_t depth() const { return depth_; }
    // Push or pop calls CUPTI refused (e.g. no driver).
    uint64_t errors() const { return errors_; }

private:
    const CuptiCollector& collector_;
    int64_t               depth_  = 0;
    uint64_t              errors_ = 0;
};

}  // namespace dyllm
