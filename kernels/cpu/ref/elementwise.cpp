// Reference elementwise add and sub.
#include "kernels/cpu/ref/elementwise.h"

namespace dyllm::cpu::ref {

void add(CMatF a, CMatF b, MatF y) {
    for (int64_t i = 0; i < y.rows; ++i)
        for (int64_t c = 0; c < y.cols; ++c) y.row(i)[c] = a.row(i)[c] + b.row(i)[c];
}

void sub(CMatF a, CMatF b, MatF y) {
    for (int64_t i = 0; i < y.rows; ++i)
        for (int64_t c = 0; c < y.cols; ++c) y.row(i)[c] = a.row(i)[c] - b.row(i)[c];
}

}  // namespace dyllm::cpu::ref
