// CUPTI activity collector (CUDA 13: CUpti_ActivityKernel10, Memcpy6, Memset4, ExternalCorrelation). The buffer
// callbacks only copy records into process-global storage under a mutex; every failure inside them is counted, never
// thrown (they are noexcept). Without DYLLM_HAVE_CUPTI a stub reports "CUPTI unavailable".
#include "instrumentation/cupti_collector.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cxxabi.h>
#include <memory>
#include <mutex>
#include <unordered_map>

#ifdef DYLLM_HAVE_CUPTI
#include <cuda_runtime_api.h>
#include <cupti.h>
#endif

namespace dyllm {

#ifdef DYLLM_HAVE_CUPTI
namespace {

// 8 MiB buffers: CUPTI's samples use a few MiB; a Kernel10 record is ~250 bytes, so one buffer holds ~30k kernels,
// more than one step of an 8B model launches.
constexpr size_t kBufferBytes = size_t(8) << 20;

struct RawActivity {
    int         kind  = 0;  // KernelKind
    uint64_t    start = 0, end = 0, bytes = 0;
    uint32_t    correlation_id = 0;
    std::string name;  // mangled kernel name, or the memcpy/memset label
};

// Process-global state reached from CUPTI's C callbacks (they carry no user pointer).
struct Global {
    std::mutex                             mutex;
    std::vector<RawActivity>               records;
    std::unordered_map<uint32_t, uint64_t> external;  // runtime correlation id -> external id
    std::atomic<uint64_t>                  dropped{0};
    std::atomic<uint64_t>                  callback_errors{0};
    std::atomic<bool>                      owned{false};  // one collector at a time
};
Global& global() {
    static Global g;
    return g;
}

std::string cupti_error(CUptiResult r) {
    const char* s = nullptr;
    if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) return "CUPTI error " + std::to_string(int(r));
    return s;
}

// CUPTI's default clock on Linux is CLOCK_REALTIME; the engine's OpTiming uses steady_clock. Handing CUPTI the
// steady clock puts GPU records on the same time line as the engine ops (CUPTI converts GPU timestamps with it).
uint64_t CUPTIAPI steady_timestamp() {
    return uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) noexcept {
    // ACTIVITY_RECORD_ALIGNMENT (cupti_common.h) is 8 bytes; aligned_alloc needs size to be a multiple of it.
    *buffer      = static_cast<uint8_t*>(std::aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, kBufferBytes));
    *size        = *buffer ? kBufferBytes : 0;
    *max_records = 0;  // as many as fit
    if (!*buffer) global().callback_errors.fetch_add(1, std::memory_order_relaxed);
}

const char* memcpy_label(uint8_t copy_kind) {
    switch (copy_kind) {
        case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
            return "memcpy HtoD";
        case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
            return "memcpy DtoH";
        case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
            return "memcpy DtoD";
        case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
            return "memcpy HtoH";
        case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
            return "memcpy PtoP";
        default:
            return "memcpy";
    }
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t size,
                               size_t valid_size) noexcept {
    Global& g = global();
    try {
        std::vector<RawActivity>                   batch;
        std::vector<std::pair<uint32_t, uint64_t>> ext;
        CUpti_Activity*                            rec = nullptr;
        for (;;) {
            const CUptiResult st = cuptiActivityGetNextRecord(buffer, valid_size, &rec);
            if (st == CUPTI_ERROR_MAX_LIMIT_REACHED) break;  // end of the buffer
            if (st != CUPTI_SUCCESS) {
                g.callback_errors.fetch_add(1, std::memory_order_relaxed);
                break;
            }
            switch (rec->kind) {
                case CUPTI_ACTIVITY_KIND_KERNEL:
                case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
                    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
                    batch.push_back({int(KernelKind::Kernel), k->start, k->end, 0, k->correlationId,
                                     k->name ? std::string(k->name) : std::string("kernel")});
                    break;
                }
                case CUPTI_ACTIVITY_KIND_MEMCPY: {
                    const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
                    batch.push_back({int(KernelKind::Memcpy), m->start, m->end, m->bytes, m->correlationId,
                                     memcpy_label(m->copyKind)});
                    break;
                }
                case CUPTI_ACTIVITY_KIND_MEMSET: {
                    const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
                    batch.push_back({int(KernelKind::Memset), m->start, m->end, m->bytes, m->correlationId, "memset"});
                    break;
                }
                case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
                    const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(rec);
                    if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
                        ext.emplace_back(e->correlationId, e->externalId);
                    break;
                }
                default:
                    break;
            }
        }
        size_t dropped = 0;
        if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS)
            g.dropped.fetch_add(dropped, std::memory_order_relaxed);
        std::lock_guard<std::mutex> lock(g.mutex);
        for (auto& r : batch) g.records.push_back(std::move(r));
        for (auto& [c, e] : ext) g.external[c] = e;
    } catch (...) {
        g.callback_errors.fetch_add(1, std::memory_order_relaxed);
    }
    std::free(buffer);
    (void)size;
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

const char* activity_kind_name(CUpti_ActivityKind k) {
    switch (k) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
            return "CONCURRENT_KERNEL";
        case CUPTI_ACTIVITY_KIND_MEMCPY:
            return "MEMCPY";
        case CUPTI_ACTIVITY_KIND_MEMSET:
            return "MEMSET";
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
            return "EXTERNAL_CORRELATION";
        default:
            return "?";
    }
}

std::string demangle(const std::string& name) {
    int   status = 0;
    char* d      = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    if (status != 0 || !d) return name;  // C names, labels, or not a mangled name
    std::string out(d);
    std::free(d);
    return out;
}

}  // namespace

bool CuptiCollector::available(std::string* why) {
    int               n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n <= 0) {
        if (why)
            *why = std::string("CUPTI unavailable: no CUDA device (cudaGetDeviceCount: ") +
                   (e != cudaSuccess ? std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e)
                                     : std::string("0 devices")) +
                   ")";
        return false;
    }
    return true;
}

bool CuptiCollector::start(std::string* error) {
    if (running_) return true;
    Global& g = global();
    if (g.owned.exchange(true)) {
        if (error) *error = "CUPTI unavailable: another CuptiCollector is already running in this process";
        return false;
    }
    auto fail = [&](const char* call, CUptiResult r) {
        for (auto k : kKinds) cuptiActivityDisable(k);
        g.owned = false;
        if (error) {
            *error               = std::string("CUPTI unavailable: ") + call + " failed: " + cupti_error(r);
            int               n  = 0;
            const cudaError_t ce = cudaGetDeviceCount(&n);  // the usual root cause, worth naming
            if (ce != cudaSuccess)
                *error += std::string(" (") + cudaGetErrorName(ce) + ": " + cudaGetErrorString(ce) + ")";
        }
        return false;
    };
    {
        std::lock_guard<std::mutex> lock(g.mutex);
        g.records.clear();
        g.external.clear();
    }
    g.dropped         = 0;
    g.callback_errors = 0;
    CUptiResult r     = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) return fail("cuptiActivityRegisterCallbacks", r);
    r = cuptiActivityRegisterTimestampCallback(steady_timestamp);
    if (r != CUPTI_SUCCESS) return fail("cuptiActivityRegisterTimestampCallback", r);
    for (auto k : kKinds) {
        r = cuptiActivityEnable(k);
        if (r != CUPTI_SUCCESS) {
            const std::string call = std::string("cuptiActivityEnable(") + activity_kind_name(k) + ")";
            return fail(call.c_str(), r);
        }
    }
    running_ = true;
    return true;
}

void CuptiCollector::flush() {
    if (!running_) return;
    // Kernels still in flight would be flushed with incomplete timestamps: wait for them (errors ignored, the
    // collector must not throw; a failed device is reported by the backend).
    (void)cudaDeviceSynchronize();
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void CuptiCollector::stop() {
    if (!running_) return;
    flush();
    for (auto k : kKinds) cuptiActivityDisable(k);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS)
        global().dropped.fetch_add(dropped, std::memory_order_relaxed);
    running_       = false;
    global().owned = false;
}

std::vector<KernelRecord> CuptiCollector::take() {
    Global&                                g = global();
    std::vector<RawActivity>               raw;
    std::unordered_map<uint32_t, uint64_t> external;
    {
        std::lock_guard<std::mutex> lock(g.mutex);
        raw.swap(g.records);
        external = g.external;  // kept: a later buffer may still hold kernels of these API calls
    }
    std::vector<KernelRecord> out;
    out.reserve(raw.size());
    for (auto& a : raw) {
        KernelRecord k;
        k.name           = a.kind == int(KernelKind::Kernel) ? demangle(a.name) : std::move(a.name);
        k.start_ns       = int64_t(a.start);
        k.end_ns         = int64_t(a.end);
        k.correlation_id = a.correlation_id;
        k.kind           = a.kind;
        k.bytes          = a.bytes;
        k.op             = uint8_t(OpClass::Other);
        if (auto it = external.find(a.correlation_id); it != external.end()) {
            k.external_id = it->second;
            decode_external_id(k.external_id, k.step, k.layer, k.op);
        }
        out.push_back(std::move(k));
    }
    std::sort(out.begin(), out.end(),
              [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
    return out;
}

uint64_t CuptiCollector::dropped_records() const {
    return global().dropped.load();
}
uint64_t CuptiCollector::callback_errors() const {
    return global().callback_errors.load();
}

void CuptiCorrelationSink::on_op_begin(int32_t step, int32_t layer, OpClass op) {
    if (!collector_.running()) return;
    if (cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                               encode_external_id(step, layer, uint8_t(op))) == CUPTI_SUCCESS)
        ++depth_;
    else
        ++errors_;
}

void CuptiCorrelationSink::on_op(const OpTiming&) {
    if (depth_ <= 0) return;  // the push was refused, or the collector started mid-op
    uint64_t last = 0;
    if (cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last) != CUPTI_SUCCESS)
        ++errors_;
    --depth_;
}

#else  // !DYLLM_HAVE_CUPTI ------------------------------------------------------------------------------------------

bool CuptiCollector::available(std::string* why) {
    if (why) *why = "CUPTI unavailable: built without CUPTI (DYLLM_CUPTI=OFF)";
    return false;
}
bool CuptiCollector::start(std::string* error) {
    return available(error);
}
void                      CuptiCollector::stop() {}
void                      CuptiCollector::flush() {}
std::vector<KernelRecord> CuptiCollector::take() {
    return {};
}
uint64_t CuptiCollector::dropped_records() const {
    return 0;
}
uint64_t CuptiCollector::callback_errors() const {
    return 0;
}
void CuptiCorrelationSink::on_op_begin(int32_t, int32_t, OpClass) {}
void CuptiCorrelationSink::on_op(const OpTiming&) {}

#endif

CuptiCollector::~CuptiCollector() {
    stop();
}

}  // namespace dyllm
