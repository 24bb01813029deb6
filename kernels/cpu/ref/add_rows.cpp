// Reference add of gathered rows, element by element.
#include "kernels/cpu/ref/add_rows.h"

namespace dyllm::cpu::ref {

void add_rows(ConstMat src, const int32_t* idx, int64_t n_idx, float* y, int64_t y_ld) {
    for (int64_t i = 0; i < n_idx; ++i)
        for (int64_t c = 0; c < src.cols; ++c) y[i * y_ld + c] += src.at(idx[i], c);
}

}  // namespace dyllm::cpu::ref
