// Reference SwiGLU gate: y = silu(gate) * up.
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu::ref {

// gate, up, y: [n, f]; y may alias gate or up.
void silu_mul(CMatF gate, CMatF up, MatF y);

}  // namespace dyllm::cpu::ref
