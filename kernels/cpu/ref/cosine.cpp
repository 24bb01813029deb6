// Reference cosine: fp64 statistics, the 1e-8 clamp on each squared norm (kernels/README.md §f.7).
#include "kernels/cpu/ref/cosine.h"

#include <algorithm>
#include <cmath>

namespace dyllm::cpu::ref {

void cosine_rows(CMatF a, CMatF b, float* cos_out) {
    for (int64_t i = 0; i < a.rows; ++i) {
        double dot = 0, na = 0, nb = 0;
        for (int64_t c = 0; c < a.cols; ++c) {
            const double x = a.row(i)[c], y = b.row(i)[c];
            dot += x * y;
            na += x * x;
            nb += y * y;
        }
        // Clamp at 1e-8: kernels/README.md §f.7 (rsqrt(max(n, 1e-8)) in the reference kernel).
        cos_out[i] = float(dot / (std::sqrt(std::max(na, 1e-8)) * std::sqrt(std::max(nb, 1e-8))));
    }
}

}  // namespace dyllm::cpu::ref
