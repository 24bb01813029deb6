// Reference elementwise add and sub.
#pragma once
#include "kernels/cpu/mat.h"

namespace dyllm::cpu::ref {

// y = a + b, y = a - b; all [n, w]; y may alias an input.
void add(CMatF a, CMatF b, MatF y);
void sub(CMatF a, CMatF b, MatF y);

}  // namespace dyllm::cpu::ref
