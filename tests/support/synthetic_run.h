// A deterministic synthetic event stream with the engine's shape (RunBegin, per step: StepBegin, op begin/timing per
// layer, LayerSaliency per layer and sequence, Unmask and Canvas per sequence, StepEnd; RunEnd). For exporter and
// sink tests without running a model (a test fixture: it lives with the tests, not in the instrumentation library).
#pragma once
#include <cstdint>

#include "instrumentation/events.h"

namespace dyllm {

struct SyntheticRunSpec {
    int32_t  n_layer    = 4;
    int32_t  n_seq      = 2;
    int32_t  prompt_len = 8;
    int32_t  gen_length = 16;
    int32_t  steps      = 8;  // must divide gen_length (n_u = gen_length / steps tokens per sequence per step)
    float    tau        = 0.99f;
    uint64_t seed       = 1;
    int64_t  t0_ns      = 1'000'000'000;  // fake steady-clock start; every op advances the fake clock
    bool     emit_ops   = true;           // op timings (also gated by sink.wants_op_timings())
};

// Emits one run into sink. Same spec, same events (timestamps included).
void emit_synthetic_run(EventSink& sink, const SyntheticRunSpec& spec);

}  // namespace dyllm
