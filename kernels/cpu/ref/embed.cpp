// Reference embedding lookup: one element at a time through load_elem.
#include "kernels/cpu/ref/embed.h"

namespace dyllm::cpu::ref {

void embed(ConstMat table, const int32_t* ids, MatF out) {
    for (int64_t i = 0; i < out.rows; ++i)
        for (int64_t c = 0; c < out.cols; ++c) out.row(i)[c] = table.at(ids[i], c);
}

}  // namespace dyllm::cpu::ref
