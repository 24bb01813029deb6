// Optimised embedding lookup (row widening).
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu {

// out[i, :] = table[ids[i], :] widened to fp32. table: [n_vocab, d]; ids: [n] in range (checked by the caller).
void embed(ConstMat table, const int32_t* ids, MatF out);

}  // namespace dyllm::cpu
