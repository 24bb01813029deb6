// Reference matrix product: the plain triple loop, fp64 accumulation, weights widened element by element.
#include "kernels/cpu/ref/matmul.h"

namespace dyllm::cpu::ref {

void matmul(CMatF x, ConstMat w, ConstMat bias, MatF y) {
    for (int64_t i = 0; i < y.rows; ++i) {
        for (int64_t o = 0; o < y.cols; ++o) {
            double acc = bias.data ? double(bias.at(0, o)) : 0.0;
            for (int64_t c = 0; c < x.cols; ++c) acc += double(x.row(i)[c]) * double(w.at(o, c));
            y.row(i)[o] = float(acc);
        }
    }
}

}  // namespace dyllm::cpu::ref
