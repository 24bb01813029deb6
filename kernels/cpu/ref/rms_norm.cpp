// Reference RMSNorm: mean of squares in fp64, scale applied per element.
#include "kernels/cpu/ref/rms_norm.h"

#include <cmath>

namespace dyllm::cpu::ref {

void rms_norm(CMatF x, ConstMat w, float eps, MatF y) {
    for (int64_t i = 0; i < y.rows; ++i) {
        double ss = 0.0;
        for (int64_t c = 0; c < x.cols; ++c) ss += double(x.row(i)[c]) * double(x.row(i)[c]);
        const double r = 1.0 / std::sqrt(ss / double(x.cols) + double(eps));
        for (int64_t c = 0; c < x.cols; ++c) y.row(i)[c] = float(double(x.row(i)[c]) * r * double(w.at(0, c)));
    }
}

}  // namespace dyllm::cpu::ref
