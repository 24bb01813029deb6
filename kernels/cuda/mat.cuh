// Raw matrix descriptors passed to the CUDA kernels (kernels/ cannot see engine/tensor.h): a device pointer, the
// element type, a shape [rows, cols] and a row stride ld in elements. Host-parseable: no device code here.
#pragma once
#include <cstdint>

namespace dyllm::cuda {

// Storage type of a matrix. Activations are F32; weights BF16/F16; caches BF16 (or F32).
// The numeric values mirror dyllm::DType's first three (F32, F16, BF16); engine/backend_cuda.cpp static_asserts it.
enum class ElemType : uint8_t { F32 = 0, F16 = 1, BF16 = 2 };

inline int elem_size(ElemType t) {
    return t == ElemType::F32 ? 4 : 2;
}

struct Mat {
    void*    data = nullptr;
    ElemType type = ElemType::F32;
    int64_t  rows = 0;
    int64_t  cols = 0;
    int64_t  ld   = 0;  // elements between the starts of consecutive rows
};

// Attention head layout: query head h reads KV head h / (n_head / n_kv_head); scores scaled by 1/sqrt(head_dim).
struct AttnDims {
    int n_head    = 0;
    int n_kv_head = 0;
    int head_dim  = 0;
};

}  // namespace dyllm::cuda
