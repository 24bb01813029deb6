// NvtxSink: NVTX v3 ranges per step, layer and op in the "dyllm" domain, so Nsight Systems shows the engine's
// structure above the CUDA kernels. Built with CUDA/CUPTI it calls NVTX (header-only, free when no tool attaches);
// otherwise it only keeps the range bookkeeping and calls nothing.
#pragma once
#include <cstdint>
#include <vector>

#include "instrumentation/events.h"

namespace dyllm {

class NvtxSink : public EventSink {
public:
    NvtxSink();
    ~NvtxSink() override;
    NvtxSink(const NvtxSink&)            = delete;
    NvtxSink& operator=(const NvtxSink&) = delete;

    // Whether this build emits real NVTX ranges.
    static bool compiled_in();

    // Ranges nest step > layer > op. A layer range opens at the first op of a new layer and closes at the next
    // layer change, at an op outside the layers (layer -1) or at the step's end. Run end and errors close everything.
    void on_step_begin(const StepBegin& e) override;
    void on_op_begin(int32_t step, int32_t layer, OpClass op) override;
    void on_op(const OpTiming& e) override;
    void on_step_end(const StepEnd& e) override;
    void on_run_end(const RunEnd& e) override;
    void on_error(const ErrorEvent& e) override;
    bool wants_cosines() const override { return false; }
    bool wants_op_timings() const override { return true; }  // op ranges need the op begin/end hooks

    int      depth() const { return int(stack_.size()); }  // ranges open now
    uint64_t pushed() const { return pushed_; }            // ranges opened so far

private:
    enum class Range : uint8_t { Step, Layer, Op };
    void push_step(const StepBegin& e);
    void push_layer(int32_t layer);
    void push_op(OpClass op);
    void pop();
    void close_all();

    std::vector<Range> stack_;
    int32_t            open_layer_ = -1;
    uint64_t           pushed_     = 0;
    void*              domain_     = nullptr;    // nvtxDomainHandle_t
    std::vector<void*> op_names_, layer_names_;  // registered nvtxStringHandle_t
};

}  // namespace dyllm
