// KernelRecord: one GPU activity (kernel, memcpy, memset) collected by CuptiCollector, already mapped to the engine
// op that launched it. Kept apart from cupti_collector.h so the exporters need no CUPTI.
#pragma once
#include <cstdint>
#include <string>

namespace dyllm {

enum class KernelKind : int { Kernel = 0, Memcpy = 1, Memset = 2 };

inline const char* kernel_kind_name(int kind) {
    switch (KernelKind(kind)) {
        case KernelKind::Kernel:
            return "kernel";
        case KernelKind::Memcpy:
            return "memcpy";
        case KernelKind::Memset:
            return "memset";
    }
    return "?";
}

struct KernelRecord {
    std::string name;                      // demangled kernel name, or "memcpy HtoD" / "memset"
    int64_t     start_ns = 0, end_ns = 0;  // steady-clock ns (same clock as OpTiming) once the collector aligned them
    uint64_t    correlation_id = 0;        // CUPTI runtime correlation id
    uint64_t    external_id    = 0;        // CuptiCorrelationSink id (0: launched outside any engine op)
    int         kind           = 0;        // KernelKind
    int32_t     step = 0, layer = -1;      // decoded from external_id (step 0: unknown)
    uint8_t     op    = 0;                 // OpClass as an integer (OpClass::Other when unknown)
    uint64_t    bytes = 0;                 // memcpy / memset size
};

// External correlation ids encode the engine op: step in bits 24..55, layer + 1 in bits 8..23, op class in bits 0..7.
// Never 0 for a real op (step >= 1), so 0 can mean "no external id".
inline uint64_t encode_external_id(int32_t step, int32_t layer, uint8_t op) {
    return (uint64_t(uint32_t(step)) << 24) | (uint64_t(uint16_t(layer + 1)) << 8) | uint64_t(op);
}
inline void decode_external_id(uint64_t id, int32_t& step, int32_t& layer, uint8_t& op) {
    step  = int32_t(uint32_t(id >> 24));
    layer = int32_t(uint16_t(id >> 8)) - 1;
    op    = uint8_t(id & 0xff);
}

}  // namespace dyllm
