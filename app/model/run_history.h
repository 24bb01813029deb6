// The UI-side history of one generation run, aggregated from the engine's events (EventRecord): per step (kind, tau,
// unmask events, per-layer saliency, op timings, wall time), per token (unmask step, score, saliency over steps x
// layers) and summaries. Every panel draws from this at a chosen step, so the history scrubber replays every panel.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "instrumentation/event_record.h"

namespace dyllm::app {

constexpr size_t kOpClasses = size_t(OpClass::Count);

// One response position of one sequence.
struct TokenInfo {
    int32_t unmask_step = 0;    // step that unmasked it; 0 = still masked
    int32_t token       = -1;   // token id once unmasked
    float   score       = NAN;  // sampler score when unmasked (LLaDA confidence, Dream negative entropy)
};

// Everything recorded about one denoising step.
struct StepData {
    int32_t                   step  = 0;  // 1-based
    bool                      begun = false, ended = false;
    StepKind                  kind         = StepKind::Full;
    float                     tau          = NAN;
    int32_t                   n_query_rows = 0;
    int64_t                   t_begin_ns   = 0;
    StepEnd                   end{};
    std::vector<UnmaskRecord> unmasks;
    // saliency[seq][layer]; has_saliency[seq][layer] says whether the engine sent that layer (FULL steps may not).
    std::vector<std::vector<LayerSaliencyRecord>> saliency;
    std::vector<std::vector<uint8_t>>             has_saliency;
    std::vector<OpTiming>                         ops;
    std::array<double, kOpClasses>                op_seconds{};  // summed durations by class

    double wall_seconds() const { return ended ? double(end.wall_ns) * 1e-9 : 0.0; }
    double ops_seconds() const;  // the summed durations of every timed op
    // "Outside ops": the step's wall time the timed ops do not cover (the scheduler, sampling bookkeeping, waits for
    // the pool, hand-offs to the event queue); 0 until the step ended. Every table, bar and Compare shows it, so the
    // shares of the op classes add up to the wall time tokens/s is measured on.
    double                     outside_ops_seconds() const;
    const LayerSaliencyRecord* layer(int seq, int l) const;
    int32_t                    salient_count(int seq, int l) const;  // -1 when not recorded
};

// Aggregates over the steps 1..upto of a run.
struct RunSummary {
    int32_t             steps               = 0;  // steps ended
    int32_t             forward_passes      = 0;  // one per step of the batch (engine/README.md §a.3)
    int64_t             tokens_committed    = 0;  // unmasked so far, all sequences
    int64_t             response_tokens     = 0;  // gen_length x sequences
    double              denoise_seconds     = 0;  // sum of step wall times (ops + outside ops; no play-speed wait)
    double              tokens_per_s        = 0;  // response tokens (committed while running) over denoise time
    double              outside_ops_seconds = 0;  // ended steps' wall time outside every timed op
    double              flops = 0, dense_flops = 0;
    double              flops_fraction = 1;  // flops / dense_flops (1 = dense)
    int64_t             ffn_rows = 0, dense_rows = 0;
    double              recompute_fraction = 1;    // ffn_rows / dense_rows
    std::vector<double> layer_recompute_fraction;  // per layer: FFN rows over rows a dense forward would process
    std::array<double, kOpClasses>               op_seconds{};
    std::array<int32_t, size_t(StepKind::Count)> steps_by_kind{};
};

// Saliency of one response position over the run: a steps x layers grid.
enum class TokenSal : uint8_t { NotTested = 0, Stable = 1, Salient = 2 };
struct TokenSaliencyGrid {
    int32_t               steps = 0, layers = 0;
    std::vector<TokenSal> state;   // [steps][layers], row s-1 for step s
    std::vector<float>    cosine;  // same layout; NaN when the cosine was not sent
    TokenSal              at(int step, int layer) const { return state[size_t(step - 1) * layers + layer]; }
    float                 cos_at(int step, int layer) const { return cosine[size_t(step - 1) * layers + layer]; }
};

struct CanvasCell {
    int32_t token       = -1;  // -1 while masked
    int32_t unmask_step = 0;   // 0 while masked
    float   score       = NAN;
    bool    masked() const { return unmask_step == 0; }
};

class RunHistory {
public:
    // Applies one event in stream order. Unknown steps are created on demand, so dropped events leave gaps, not errors.
    void apply(const EventRecord& ev);

    bool            has_run() const { return has_run_; }
    const RunBegin& info() const { return info_; }
    bool            finished() const { return finished_; }
    const RunEnd&   run_end() const { return run_end_; }
    int32_t         n_layer() const { return info_.n_layer; }
    int32_t         n_seq() const { return info_.n_seq; }
    int32_t         gen_length() const { return info_.gen_length; }
    int32_t         prompt_len(int seq) const;
    std::string     env(const std::string& key) const;  // RunBegin env value, "" when absent

    int32_t         step_count() const { return int32_t(steps_.size()); }  // highest step seen
    int32_t         steps_ended() const;
    const StepData* step(int k) const;  // 1-based; nullptr outside [1, step_count()]

    const std::vector<TokenInfo>& tokens(int seq) const;
    const std::vector<int32_t>&   prompt_tokens(int seq) const;  // from canvas snapshots; empty until one arrived
    // The response canvas as it was after step k (k = 0: all masked). Unmasked tokens never change, so the canvas at
    // any step follows from each position's unmask step.
    std::vector<CanvasCell> canvas_at(int seq, int k) const;
    int32_t                 masked_at(int seq, int k) const;

    TokenSaliencyGrid token_saliency(int seq, int response_pos) const;
    // Per response position: how many layers found it salient (recomputed it) at step k; all 0 for a step without
    // cosine tests. The Canvas marks these positions in the salient colour.
    std::vector<int32_t> salient_layers(int seq, int k) const;
    RunSummary           summary(int upto_step = -1) const;

    const std::vector<ErrorRecord>& errors() const { return errors_; }
    const std::vector<EventRecord>& events() const { return events_; }  // raw stream, for the exporters

private:
    StepData& step_mut(int k);
    void      ensure_seq(int seq);
    void      apply_canvas(const CanvasRecord& c);

    bool                                has_run_ = false, finished_ = false;
    RunBegin                            info_;
    RunEnd                              run_end_{};
    std::vector<StepData>               steps_;
    std::vector<std::vector<TokenInfo>> tokens_;   // [seq][response position]
    std::vector<std::vector<int32_t>>   prompts_;  // [seq] prompt token ids
    std::vector<ErrorRecord>            errors_;
    std::vector<EventRecord>            events_;
};

}  // namespace dyllm::app
