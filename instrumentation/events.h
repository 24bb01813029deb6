// The engine's event stream: plain event structs and the EventSink interface.
// Header-only with no dependencies, so the engine can emit events without linking any sink. Spans inside an event are
// valid only during the call: a sink that keeps them must copy.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dyllm {

// What kind of forward pass a denoising step ran (engine/README.md §a.3, §d, §e): the list in
// instrumentation/step_kinds.def, with each kind's trace name and whether it is dense.
enum class StepKind : uint8_t {
#define DYLLM_STEP_KIND(id, name, dense) id,
#include "instrumentation/step_kinds.def"
#undef DYLLM_STEP_KIND
    Count
};

inline const char* step_kind_name(StepKind k) {
    static constexpr const char* kNames[] = {
#define DYLLM_STEP_KIND(id, name, dense) name,
#include "instrumentation/step_kinds.def"
#undef DYLLM_STEP_KIND
    };
    return size_t(k) < std::size(kNames) ? kNames[size_t(k)] : "?";
}

// Whether a step of kind k is a dense forward (every row's K/V and FFN computed afresh).
inline bool is_dense_step(StepKind k) {
    static constexpr bool kDense[] = {
#define DYLLM_STEP_KIND(id, name, dense) dense,
#include "instrumentation/step_kinds.def"
#undef DYLLM_STEP_KIND
    };
    return size_t(k) < std::size(kDense) && kDense[size_t(k)];
}

// The kind named `name` in traces, or Count when no kind has that name.
inline StepKind parse_step_kind(std::string_view name) {
    for (int k = 0; k < int(StepKind::Count); ++k)
        if (name == step_kind_name(StepKind(k))) return StepKind(k);
    return StepKind::Count;
}

// Op classes the timers and the Time panel group by (the studio's Time panel stacks them per step).
// clang-format off
enum class OpClass : uint8_t {
    Embed, Norm, Qkv, Rope, AttnExact, AttnApprox, OProj, Ffn, LmHead, Sampling, GatherScatter, Cosine, Residual, Other,
    Count
};
// clang-format on

inline const char* op_class_name(OpClass c) {
    static constexpr const char* kNames[] = {"embed",          "norm",   "qkv",      "rope",    "attn_exact",
                                             "attn_approx",    "o_proj", "ffn",      "lm_head", "sampling",
                                             "gather_scatter", "cosine", "residual", "other"};
    const auto                   i        = size_t(c);
    return i < size_t(OpClass::Count) ? kNames[i] : "?";
}

enum class EventDevice : uint8_t { Cpu, Cuda };

// ---- cosine histogram bins -------------------------------------------------------------------------------------
// Cosines of a token's attention context between steps cluster just below 1, so bins are on x = log10(1 - cos):
// bin 0 holds 1 - cos < 1e-7 (including cos >= 1); bins 1..14 split x in [-7, 0) into half decades; bin 15 holds
// cos <= 0 (1 - cos >= 1).
constexpr int kCosineBins = 16;

// Lower edges of bins 2..14 in d = 1 - cos: 10^(-6.5), 10^(-6), ..., 10^(-0.5). A bin is the number of edges d
// reaches, so binning is 13 compares instead of a log10 per cosine (the studio bins every tested row of every layer
// and step); it equals 1 + floor(2 (log10(d) + 7)) except within an ulp of an edge (tests/unit/test_trace_engine.cpp).
inline constexpr double kCosineBinEdges[kCosineBins - 3] = {3.1622776601683792e-07, 1e-6, 3.1622776601683792e-06, 1e-5,
                                                            3.1622776601683795e-05, 1e-4, 0.00031622776601683794, 1e-3,
                                                            0.0031622776601683794,  1e-2, 0.031622776601683791,   1e-1,
                                                            0.31622776601683794};

inline int cosine_bin(float cos) {
    const double d = 1.0 - double(cos);
    if (!(d >= 1e-7)) return 0;  // also catches NaN
    if (d >= 1.0) return kCosineBins - 1;
    int b = 1;
    for (double e : kCosineBinEdges) b += d >= e;
    return b;
}
// Lower edge of bin b in cosine units (bin 0: 1 - 1e-7; last bin: -1).
inline double cosine_bin_lower_cos(int b) {
    if (b <= 0) return 1.0 - 1e-7;
    if (b >= kCosineBins - 1) return -1.0;
    return 1.0 - std::pow(10.0, -7.0 + 0.5 * b);
}
inline double cosine_bin_upper_cos(int b) {
    if (b <= 0) return 1.0;
    return cosine_bin_lower_cos(b - 1);
}

using CosineHistogram = std::array<uint32_t, kCosineBins>;

// ---- events --------------------------------------------------------------------------------------------------
// Once per run, before the first step: what ran and on what (every export starts with this).
struct RunBegin {
    std::string label;    // the caller's name for this run (Session::set_label), e.g. "dyllm tau 0.99"; may be ""
    std::string method;   // "original", "dyllm", "fast-prefix", "fast-dual", "dllm-cache"
    std::string model;    // model directory or built-in name
    std::string family;   // "llada" / "dream"
    std::string backend;  // backend description
    int32_t     n_layer    = 0;
    int32_t     n_seq      = 0;
    int32_t     gen_length = 0;
    int32_t     steps      = 0;
    std::vector<int32_t> prompt_lengths;
    // Every parameter and environment fact as key/value strings (tau, T_full, seed, versions, device...).
    std::vector<std::pair<std::string, std::string>> env;
};

struct StepBegin {
    int32_t  step         = 0;  // 1-based denoising step
    StepKind kind         = StepKind::Full;
    float    tau          = 0;  // threshold in force for this step
    int32_t  n_query_rows = 0;
    int64_t  t_ns         = 0;  // steady clock
};

// One layer's saliency decision for one sequence (DyLLM: from the engine's own cosine test; other methods: the opt-in
// measurement of the attention-context cosine between consecutive steps).
struct LayerSaliency {
    int32_t                  step      = 0;
    int32_t                  layer     = 0;
    int32_t                  seq       = 0;
    int32_t                  n_rows    = 0;  // query rows tested
    int32_t                  n_salient = 0;  // rows with cos < tau (== salient_positions.size() for DyLLM)
    float                    tau       = 0;
    CosineHistogram          hist{};                // counts per cosine_bin(), sums to n_rows
    std::span<const int32_t> row_positions;         // sequence positions of the tested rows
    std::span<const float>   cosines;               // one per tested row (may be empty when the sink did not ask)
    std::span<const int32_t> salient_positions;     // ascending sequence positions of S_l
    int32_t                  ffn_rows         = 0;  // rows that went through the FFN at this layer
    int32_t                  kv_rows          = 0;  // rows whose K/V were recomputed
    int32_t                  attn_exact_rows  = 0;
    int32_t                  attn_approx_rows = 0;
    // Drift (opt-in measure_drift, DyLLM sparse layers): cosine between each approximated row's context and exact
    // attention over the same caches, on the bins of hist. drift_count = 0: nothing approximated, or not measured.
    CosineHistogram        drift_hist{};
    int32_t                drift_count = 0;
    float                  drift_min = NAN, drift_mean = NAN;
    std::span<const float> drift;  // one per tested row, NaN where exact (empty: not measured or !wants_cosines())
};

struct Unmask {
    int32_t                  step = 0;
    int32_t                  seq  = 0;
    std::span<const int32_t> positions;  // response-relative positions, in the order they were chosen
    std::span<const int32_t> tokens;
    std::span<const float>   scores;
};

// The thread CPU clock is a system call (0.55 us on a Zen 4 VM, 1.6 us on a Zen 5 one, against 27 ns for the steady
// clock), and a small model's step is thousands of ops of a few us: one read per op cost +55% on tiny-llada on the
// Zen 5 (tests/bench/bench_instr_overhead --breakdown). Its one use is the preempted-op flag (app/model/op_preempt.h),
// which cannot flag an op shorter than its slack, so only ops of at least kOpCpuTimeMinNs carry a CPU time: each
// reads the clock once at its end, beside a start reading taken before the op, at most kCpuMarkMaxAgeNs before it
// (one per that much wall time of a thread's back-to-back short ops). Inside an engine run a read costs far more
// than alone (6-10 us on the paravirtualised Zen 5 VM: the kernel entry evicts the step's working set), so the age
// bound sets the timer's cost: tiny-llada DyLLM, gen 128, op timings only: +10-11% at 50 us (1750 reads a run),
// +5.7-5.9% at 150 us (690); gen 64, the studio's queue sink: +12.4-15.0% at 150 us (248), +7.8-11.6% at 1 ms (40).
// The op records how old its start reading was (cpu_gap_ns) and the flag counts that gap as CPU time the op may have
// had, so an older reading makes the flag miss short preemptions, never invent one.
constexpr int64_t kOpCpuTimeMinNs  = 200'000;
constexpr int64_t kCpuMarkMaxAgeNs = 1'000'000;
static_assert(kCpuMarkMaxAgeNs <= INT32_MAX, "OpTiming::cpu_gap_ns holds a start reading's age");

struct OpTiming {
    int32_t     step       = 0;
    int32_t     layer      = -1;  // -1 outside the layers (embed, lm_head, sampling)
    OpClass     op         = OpClass::Other;
    EventDevice device     = EventDevice::Cpu;
    int64_t     t_begin_ns = 0;  // steady clock
    int64_t     dur_ns     = 0;
    double      flops      = 0;
    double      bytes      = 0;
    int32_t     rows       = 0;
    // The op's CPU time on the thread that ran it (CLOCK_THREAD_CPUTIME_ID), for ops of at least kOpCpuTimeMinNs of
    // wall time, as a range: [cpu_ns, cpu_ns + cpu_gap_ns]. The clock is read once after the op's end and once
    // cpu_gap_ns (at most kCpuMarkMaxAgeNs) before its start; cpu_ns is their difference less that gap, at least 0,
    // i.e. it assumes the thread ran the engine for the whole gap, and falls short of the op's own CPU time by any
    // time the thread lost in the gap. It may exceed dur_ns by the reads' cost.
    // cpu_ns -1: not measured (a shorter op, an older file, a failed clock); cpu_gap_ns 0 in files older than it.
    // When `split`, the op handed work to the CPU pool's other threads and cpu_ns counts the calling thread only (its
    // share of the work, not its waits for the others).
    int64_t cpu_ns     = -1;
    int32_t cpu_gap_ns = 0;
    bool    split      = false;
};

struct StepEnd {
    int32_t step             = 0;
    int64_t wall_ns          = 0;
    int32_t tokens_committed = 0;  // unmasked in this step, all sequences
    int32_t masked_left      = 0;  // still masked, all live sequences
    double  flops            = 0;  // work done in this step's forward
    double  dense_flops      = 0;  // work a dense forward over the same sequences would do
    int32_t ffn_rows = 0, kv_rows = 0, attn_exact_rows = 0, attn_approx_rows = 0, query_rows = 0;
    int32_t dense_rows = 0;  // rows x layers a dense step would push through the FFN
    int64_t t_ns       = 0;
};

// The full canvas of one sequence after a step (too large for the queue: sinks double-buffer it).
struct CanvasSnapshot {
    int32_t                  step       = 0;
    int32_t                  seq        = 0;
    int32_t                  prompt_len = 0;
    std::span<const int32_t> tokens;       // whole sequence: prompt + response
    std::span<const int32_t> unmask_step;  // per response position: step that unmasked it, 0 = still masked
    std::span<const float>   scores;       // per response position: score when unmasked
    bool                     finished = false;
};

struct RunEnd {
    int32_t                  steps       = 0;
    int64_t                  wall_ns     = 0;
    int32_t                  tokens      = 0;
    bool                     cancelled   = false;
    double                   cache_bytes = 0;  // peak bytes of the method's caches during the run
    std::vector<std::string> texts;            // decoded response of each sequence (as SequenceResult::text)
};

struct ErrorEvent {
    std::string_view where;  // "load", "step", "backend"...
    std::string_view message;
};

// Receives events from the engine's worker thread. Default methods ignore everything, so a sink overrides only what
// it needs. The engine holds an EventSink* (null by default: then no event is built and no histogram computed).
class EventSink {
public:
    virtual ~EventSink() = default;
    virtual void on_run_begin(const RunBegin&) {}
    virtual void on_step_begin(const StepBegin&) {}
    virtual void on_op_begin(int32_t /*step*/, int32_t /*layer*/, OpClass) {}  // NVTX / CUPTI correlation hooks
    virtual void on_op(const OpTiming&) {}
    virtual void on_layer_saliency(const LayerSaliency&) {}
    virtual void on_unmask(const Unmask&) {}
    virtual void on_canvas(const CanvasSnapshot&) {}
    virtual void on_step_end(const StepEnd&) {}
    virtual void on_run_end(const RunEnd&) {}
    virtual void on_error(const ErrorEvent&) {}
    // Whether to include the per-row cosines in LayerSaliency (the histogram and counts are always sent).
    virtual bool wants_cosines() const { return true; }
    // Whether to time every backend op (OpTiming events).
    virtual bool wants_op_timings() const { return true; }
};

// Forwards every event to several sinks (e.g. the GUI queue and a trace recorder).
class TeeSink : public EventSink {
public:
    explicit TeeSink(std::vector<EventSink*> sinks) : sinks_(std::move(sinks)) {}
    void on_run_begin(const RunBegin& e) override {
        for (auto* s : sinks_) s->on_run_begin(e);
    }
    void on_step_begin(const StepBegin& e) override {
        for (auto* s : sinks_) s->on_step_begin(e);
    }
    void on_op_begin(int32_t st, int32_t l, OpClass c) override {
        for (auto* s : sinks_) s->on_op_begin(st, l, c);
    }
    void on_op(const OpTiming& e) override {
        for (auto* s : sinks_) s->on_op(e);
    }
    void on_layer_saliency(const LayerSaliency& e) override {
        for (auto* s : sinks_) s->on_layer_saliency(e);
    }
    void on_unmask(const Unmask& e) override {
        for (auto* s : sinks_) s->on_unmask(e);
    }
    void on_canvas(const CanvasSnapshot& e) override {
        for (auto* s : sinks_) s->on_canvas(e);
    }
    void on_step_end(const StepEnd& e) override {
        for (auto* s : sinks_) s->on_step_end(e);
    }
    void on_run_end(const RunEnd& e) override {
        for (auto* s : sinks_) s->on_run_end(e);
    }
    void on_error(const ErrorEvent& e) override {
        for (auto* s : sinks_) s->on_error(e);
    }
    bool wants_cosines() const override {
        for (auto* s : sinks_)
            if (s->wants_cosines()) return true;
        return false;
    }
    bool wants_op_timings() const override {
        for (auto* s : sinks_)
            if (s->wants_op_timings()) return true;
        return false;
    }

private:
    std::vector<EventSink*> sinks_;
};

}  // namespace dyllm
