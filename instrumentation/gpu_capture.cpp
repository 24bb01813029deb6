// GpuCapture: CUPTI collector + correlation sink + NVTX ranges behind one start (instrumentation/gpu_capture.h).
#include "instrumentation/gpu_capture.h"

namespace dyllm {

void GpuCapture::start(bool cuda, bool cupti) {
    if (!cuda) {
        status_ = "off (cpu backend)";
        return;
    }
    if (!nvtx_) nvtx_ = std::make_unique<NvtxSink>();
    if (!cupti) {
        status_ = "off (--no-cupti)";
        return;
    }
    std::string why;
    status_ = collector_.start(&why) ? std::string("on") : why;
}

std::vector<EventSink*> GpuCapture::sinks() {
    std::vector<EventSink*> v;
    if (nvtx_) v.push_back(nvtx_.get());
    if (collector_.running()) v.push_back(&correlation_);
    return v;
}

std::vector<KernelRecord> GpuCapture::take_completed() {
    collector_.flush();
    return collector_.take();
}

void GpuCapture::stop() {
    collector_.stop();
}

void GpuCapture::add_env(std::vector<std::pair<std::string, std::string>>& env, size_t records) const {
    env.emplace_back("cupti", status_);
    env.emplace_back("cupti_records", std::to_string(records));
    env.emplace_back("cupti_dropped_records", std::to_string(collector_.dropped_records()));
    env.emplace_back("cupti_callback_errors", std::to_string(collector_.callback_errors()));
    env.emplace_back("nvtx", nvtx_on() ? "on" : "off");
}

}  // namespace dyllm
