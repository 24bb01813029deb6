// Owning copies of the engine's events (events.h holds spans valid only during a call). The queue sink, the recorder
// and the exporters store these; the app's model/ layer consumes them.
#pragma once
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

inline LayerSaliencyRecord to_record(const LayerSaliency& e) {
    LayerSaliencyRecord r;
    r.step = e.step, r.layer = e.layer, r.seq = e.seq, r.n_rows = e.n_rows, r.n_salient = e.n_salient, r.tau = e.tau;
    r.hist = e.hist;
    r.row_positions.assign(e.row_positions.begin(), e.row_positions.end());
    r.cosines.assign(e.cosines.begin(), e.cosines.end());
    r.salient_positions.assign(e.salient_positions.begin(), e.salient_positions.end());
    r.ffn_rows = e.ffn_rows, r.kv_rows = e.kv_rows, r.attn_exact_rows = e.attn_exact_rows;
    r.attn_approx_rows = e.attn_approx_rows;
    r.drift_hist = e.drift_hist, r.drift_count = e.drift_count, r.drift_min = e.drift_min, r.drift_mean = e.drift_mean;
    r.drift.assign(e.drift.begin(), e.drift.end());
    return r;
}

inline UnmaskRecord to_record(const Unmask& e) {
    UnmaskRecord r;
    r.step = e.step, r.seq = e.seq;
    r.positions.assign(e.positions.begin(), e.positions.end());
    r.tokens.assign(e.tokens.begin(), e.tokens.end());
    r.scores.assign(e.scores.begin(), e.scores.end());
    return r;
}

inline CanvasRecord to_record(const CanvasSnapshot& e) {
    CanvasRecord r;
    r.step = e.step, r.seq = e.seq, r.prompt_len = e.prompt_len, r.finished = e.finished;
    r.tokens.assign(e.tokens.begin(), e.tokens.end());
    r.unmask_step.assign(e.unmask_step.begin(), e.unmask_step.end());
    r.scores.assign(e.scores.begin(), e.scores.end());
    return r;
}

inline ErrorRecord to_record(const ErrorEvent& e) {
    return ErrorRecord{std::string(e.where), std::string(e.message)};
}

}  // namespace dyllm
