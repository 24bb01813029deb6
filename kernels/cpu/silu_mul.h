// Optimised SwiGLU gate.
#pragma once
#include "kernels/cpu/mat.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm::cpu {

// y = silu(gate) * up with kernels/common's fp32 silu. gate, up, y: [n, f]; y may alias gate or up. Rows split
// over the pool (expf dominates: n * f of them per FFN).
void silu_mul(CMatF gate, CMatF up, MatF y, ThreadPool& pool);

}  // namespace dyllm::cpu
