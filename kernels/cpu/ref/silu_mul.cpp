// Reference SwiGLU gate, silu in fp64 as an independent check of kernels/common's fp32 silu.
#include "kernels/cpu/ref/silu_mul.h"

#include <cmath>

namespace dyllm::cpu::ref {

void silu_mul(CMatF gate, CMatF up, MatF y) {
    for (int64_t i = 0; i < y.rows; ++i) {
        for (int64_t c = 0; c < y.cols; ++c) {
            const double g = gate.row(i)[c];
            y.row(i)[c]    = float(g / (1.0 + std::exp(-g)) * double(up.row(i)[c]));
        }
    }
}

}  // namespace dyllm::cpu::ref
