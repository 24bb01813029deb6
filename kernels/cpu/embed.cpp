// Optimised embedding lookup: one widen_row per token.
#include "kernels/cpu/embed.h"

#include "kernels/cpu/convert.h"

namespace dyllm::cpu {

void embed(ConstMat table, const int32_t* ids, MatF out) {
    for (int64_t i = 0; i < out.rows; ++i) widen_row(table.row_ptr(ids[i]), table.type, out.row(i), out.cols);
}

}  // namespace dyllm::cpu
