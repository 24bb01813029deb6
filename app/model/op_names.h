// Ops named as the model names them (q, k, v, o, gate, up, down, lm_head...) with their GEMM shape M x N x K. The
// engine's OpTiming carries only the op class, rows and FLOPs; the name follows from the order of the ops within a
// layer (engine/forward.cpp: q, k, v of one qkv() call, then rope; gate, up, silu_mul, down) and the shape from the
// FLOPs, the rows and n_embd.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "instrumentation/events.h"

namespace dyllm::app {

// clang-format off
enum class OpName : uint8_t {
    Embed, Norm, Q, K, V, Rope, AttnExact, AttnApprox, O, Gate, Up, SiluMul, Down, LmHead, Sampling, GatherScatter,
    Cosine, Residual, Other, Count
};
// clang-format on
constexpr size_t kOpNames = size_t(OpName::Count);
const char*      op_name_text(OpName n);   // "q", "gate", "attn_exact", ...
OpClass          op_name_class(OpName n);  // the engine's class of that name (for the class colours)

struct NamedOp {
    OpName  name = OpName::Other;
    int64_t m = 0, n = 0, k = 0;  // GEMM y[m, n] = x[m, k] W^T; all 0 for other ops or when n_embd is unknown
    bool    is_gemm() const { return m > 0 && n > 0 && k > 0; }
};

// One name per op of `ops` (one step's OpTimings in stream order). n_embd <= 0: names only, no shapes.
std::vector<NamedOp> name_ops(std::span<const OpTiming> ops, int n_embd);

}  // namespace dyllm::app
