// Owning copies of the engine's events (events.h holds spans valid only during a call). The queue sink, the recorder
// and the exporters store these; the app's model/ layer consumes them.
#pragma once
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "instrumentation/events.h"

namespace dyllm {

struct LayerSaliencyRecord {
    int32_t              step = 0, layer = 0, seq = 0, n_rows = 0, n_salient = 0;
    float                tau = 0;
    CosineHistogram      hist{};
    std::vector<int32_t> row_positions;
    std::vector<float>   cosines;
    std::vector<int32_t> salient_positions;
    int32_t              ffn_rows = 0, kv_rows = 0, attn_exact_rows = 0, attn_approx_rows = 0;
    CosineHistogram      drift_hist{};  // drift (events.h): approx-vs-exact cosines of the approximated rows
    int32_t              drift_count = 0;
    float                drift_min = NAN, drift_mean = NAN;
    std::vector<float>   drift;
};

struct UnmaskRecord {
    int32_t              step = 0, seq = 0;
    std::vector<int32_t> positions, tokens;
    std::vector<float>   scores;
};

struct CanvasRecord {
    int32_t              step = 0, seq = 0, prompt_len = 0;
    std::vector<int32_t> tokens, unmask_step;
    std::vector<float>   scores;
    bool                 finished = false;
};

struct ErrorRecord {
    std::string where, message;
};

using EventRecord = std::variant<RunBegin, StepBegin, OpTiming, LayerSaliencyRecord, UnmaskRecord, CanvasRecord,
                                 StepEnd, RunEnd, ErrorRecord>;

// Which alternative an EventRecord holds, in variant order (record_kind(r) == RecordKind(r.index())).
enum class RecordKind : uint8_t {
    RunBegin,
    StepBegin,
    OpTiming,
    LayerSaliency,
    Unmask,
    Canvas,
    StepEnd,
    RunEnd,
    Error
};
static_assert(std::variant_size_v<EventRecord> == 9, "RecordKind must list every EventRecord alternative");

inline RecordKind record_kind(const EventRecord& r) {
    return RecordKind(r.index());
}

// An owning copy of a span an event lends.
template <class T>
std::vector<T> owned(std::span<const T> s) {
    return std::vector<T>(s.begin(), s.end());
}

inline LayerSaliencyRecord to_record(const LayerSaliency& e) {
    return LayerSaliencyRecord{
        .step              = e.step,
        .layer             = e.layer,
        .seq               = e.seq,
        .n_rows            = e.n_rows,
        .n_salient         = e.n_salient,
        .tau               = e.tau,
        .hist              = e.hist,
        .row_positions     = owned(e.row_positions),
        .cosines           = owned(e.cosines),
        .salient_positions = owned(e.salient_positions),
        .ffn_rows          = e.ffn_rows,
        .kv_rows           = e.kv_rows,
        .attn_exact_rows   = e.attn_exact_rows,
        .attn_approx_rows  = e.attn_approx_rows,
        .drift_hist        = e.drift_hist,
        .drift_count       = e.drift_count,
        .drift_min         = e.drift_min,
        .drift_mean        = e.drift_mean,
        .drift             = owned(e.drift),
    };
}

inline UnmaskRecord to_record(const Unmask& e) {
    return UnmaskRecord{
        .step      = e.step,
        .seq       = e.seq,
        .positions = owned(e.positions),
        .tokens    = owned(e.tokens),
        .scores    = owned(e.scores),
    };
}

inline CanvasRecord to_record(const CanvasSnapshot& e) {
    return CanvasRecord{
        .step        = e.step,
        .seq         = e.seq,
        .prompt_len  = e.prompt_len,
        .tokens      = owned(e.tokens),
        .unmask_step = owned(e.unmask_step),
        .scores      = owned(e.scores),
        .finished    = e.finished,
    };
}

inline ErrorRecord to_record(const ErrorEvent& e) {
    return ErrorRecord{std::string(e.where), std::string(e.message)};
}

}  // namespace dyllm
