// Row conversions between the storage types (F32/F16/BF16), used to widen weight panels and cache rows to fp32.
#pragma once
#include <cstdint>

#include "kernels/cpu/mat.h"

namespace dyllm::cpu {

// dst[0..n) = float(src[0..n)) for a row stored as `t`.
void widen_row(const void* src, ElemType t, float* dst, int64_t n);
// dst[0..n) = src[0..n) rounded to nearest even in type `t` (a plain copy for F32).
void narrow_row(const float* src, void* dst, ElemType t, int64_t n);
// Converts a row between any two storage types (a memcpy when they are equal). src and dst must not overlap
// unless they are the same pointer with the same type.
void convert_row(const void* src, ElemType st, void* dst, ElemType dt, int64_t n);

}  // namespace dyllm::cpu
