// Raw matrix descriptors taken by every CPU kernel (kernels/ must not see engine/tensor.h): a pointer, a shape
// [rows, cols], a row stride `ld` in elements (ld >= cols), and for weights the element type of the storage.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/common/dtype_convert.h"

namespace dyllm::cpu {

// Storage type of a weight, embedding table or cache matrix. Activations are always F32.
enum class ElemType : uint8_t { F32, F16, BF16 };

inline size_t elem_size(ElemType t) {
    return t == ElemType::F32 ? 4 : 2;
}

// Element i of a row stored as `t`, widened to fp32.
inline float load_elem(const void* row, ElemType t, int64_t i) {
    switch (t) {
        case ElemType::F32:
            return static_cast<const float*>(row)[i];
        case ElemType::F16:
            return f16_to_f32(static_cast<const uint16_t*>(row)[i]);
        case ElemType::BF16:
            return bf16_to_f32(static_cast<const uint16_t*>(row)[i]);
    }
    return 0.0f;
}

// A read-only matrix of any storage type: row r starts at data + r * ld * elem_size(type).
struct ConstMat {
    const void* data = nullptr;
    ElemType    type = ElemType::F32;
    int64_t     rows = 0;
    int64_t     cols = 0;
    int64_t     ld   = 0;

    const void* row_ptr(int64_t r) const { return static_cast<const char*>(data) + r * ld * int64_t(elem_size(type)); }
    float       at(int64_t r, int64_t c) const { return load_elem(row_ptr(r), type, c); }
};

// A read-only fp32 matrix.
struct CMatF {
    const float* data = nullptr;
    int64_t      rows = 0;
    int64_t      cols = 0;
    int64_t      ld   = 0;

    const float* row(int64_t r) const { return data + r * ld; }
};

// A writable fp32 matrix.
struct MatF {
    float*  data = nullptr;
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t ld   = 0;

    float* row(int64_t r) const { return data + r * ld; }
           operator CMatF() const { return CMatF{data, rows, cols, ld}; }
};

// Attention head layout: query head h reads KV head h / (n_head / n_kv_head) (GQA); scores scaled by 1/sqrt(head_dim).
struct AttnDims {
    int n_head    = 0;
    int n_kv_head = 0;
    int head_dim  = 0;
};

// How score_logits scores a row (engine/README.md §a.9 step 4).
enum class ScoreRule : uint8_t {
    Confidence,  // softmax probability of the argmax token (LLaDA)
    NegEntropy,  // sum_v p_v log(p_v + 1e-10) (Dream)
};

}  // namespace dyllm::cpu
