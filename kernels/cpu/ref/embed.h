// Reference embedding lookup.
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu::ref {

// out[i, :] = table[ids[i], :] widened to fp32. table: [n_vocab, d]; ids: [n] (each in [0, n_vocab)); out: [n, d].
void embed(ConstMat table, const int32_t* ids, MatF out);

}  // namespace dyllm::cpu::ref
