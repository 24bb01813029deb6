// NvtxSink: step/layer/op ranges through the NVTX v3 domain API (header-only, from the CUDA toolkit).
#include "instrumentation/nvtx_sink.h"

#include <string>

#ifdef DYLLM_HAVE_CUPTI
#include <nvtx3/nvToolsExt.h>
#endif

namespace dyllm {

#ifdef DYLLM_HAVE_CUPTI
namespace {
nvtxDomainHandle_t dom(void* d) {
    return static_cast<nvtxDomainHandle_t>(d);
}

void push_range(void* domain, const char* ascii, void* registered, uint32_t color) {
    nvtxEventAttributes_t a{};
    a.version   = NVTX_VERSION;
    a.size      = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.colorType = NVTX_COLOR_ARGB;
    a.color     = color;
    if (registered) {
        a.messageType        = NVTX_MESSAGE_TYPE_REGISTERED;
        a.message.registered = static_cast<nvtxStringHandle_t>(registered);
    } else {
        a.messageType   = NVTX_MESSAGE_TYPE_ASCII;
        a.message.ascii = ascii;
    }
    nvtxDomainRangePushEx(dom(domain), &a);
}
}  // namespace

bool NvtxSink::compiled_in() {
    return true;
}

NvtxSink::NvtxSink() {
    domain_ = nvtxDomainCreateA("dyllm");
    // Registered strings avoid re-hashing the op names on every range (NVTX docs: nvtxDomainRegisterString).
    for (int c = 0; c < int(OpClass::Count); ++c)
        op_names_.push_back(nvtxDomainRegisterStringA(dom(domain_), op_class_name(OpClass(c))));
}

NvtxSink::~NvtxSink() {
    close_all();
    nvtxDomainDestroy(dom(domain_));
}
#else
bool NvtxSink::compiled_in() {
    return false;
}
NvtxSink::NvtxSink() = default;
NvtxSink::~NvtxSink() {
    close_all();
}
#endif

// ARGB colours: steps blue, layers grey, ops orange (only a hint to the viewer).
void NvtxSink::push_step(const StepBegin& e) {
#ifdef DYLLM_HAVE_CUPTI
    const std::string name = "step " + std::to_string(e.step) + " " + step_kind_name(e.kind);
    push_range(domain_, name.c_str(), nullptr, 0xff3b6fd4u);
#endif
    stack_.push_back(Range::Step);
    ++pushed_;
}

void NvtxSink::push_layer(int32_t layer) {
#ifdef DYLLM_HAVE_CUPTI
    while (int32_t(layer_names_.size()) <= layer) {
        const std::string name = "layer " + std::to_string(layer_names_.size());
        layer_names_.push_back(nvtxDomainRegisterStringA(dom(domain_), name.c_str()));
    }
    push_range(domain_, nullptr, layer_names_[size_t(layer)], 0xff8a8a8au);
#endif
    stack_.push_back(Range::Layer);
    open_layer_ = layer;
    ++pushed_;
}

void NvtxSink::push_op(OpClass op) {
#ifdef DYLLM_HAVE_CUPTI
    const size_t i = size_t(op) < op_names_.size() ? size_t(op) : size_t(OpClass::Other);
    push_range(domain_, nullptr, op_names_[i], 0xffe0892fu);
#endif
    stack_.push_back(Range::Op);
    ++pushed_;
}

void NvtxSink::pop() {
    if (stack_.empty()) return;
#ifdef DYLLM_HAVE_CUPTI
    nvtxDomainRangePop(dom(domain_));
#endif
    if (stack_.back() == Range::Layer) open_layer_ = -1;
    stack_.pop_back();
}

void NvtxSink::close_all() {
    while (!stack_.empty()) pop();
}

void NvtxSink::on_step_begin(const StepBegin& e) {
    close_all();  // a step that never ended (cancel, error) must not leave ranges open
    push_step(e);
}

void NvtxSink::on_op_begin(int32_t /*step*/, int32_t layer, OpClass op) {
    // Layer ranges change only between top-level ops; a nested op stays inside its parent's layer range.
    if (stack_.empty() || stack_.back() != Range::Op) {
        if (layer != open_layer_ || (layer >= 0 && (stack_.empty() || stack_.back() != Range::Layer))) {
            if (!stack_.empty() && stack_.back() == Range::Layer) pop();
            if (layer >= 0) push_layer(layer);
        }
    }
    push_op(op);
}

void NvtxSink::on_op(const OpTiming&) {
    if (!stack_.empty() && stack_.back() == Range::Op) pop();
}

void NvtxSink::on_step_end(const StepEnd&) {
    close_all();
}
void NvtxSink::on_run_end(const RunEnd&) {
    close_all();
}
void NvtxSink::on_error(const ErrorEvent&) {
    close_all();
}

}  // namespace dyllm
