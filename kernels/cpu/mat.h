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

// Block-quantized storage of a weight or embedding table, in ggml's block layouts (kernels/cpu/ref/quant.h): a row
// of n elements is n / quant_block_elems(t) blocks of quant_block_bytes(t) bytes each.
enum class QuantType : uint8_t { Q8_0, Q4_0, Q4_K, Q5_K, Q6_K };

inline int64_t quant_block_elems(QuantType t) {
    return t == QuantType::Q8_0 || t == QuantType::Q4_0 ? 32 : 256;
}
inline size_t quant_block_bytes(QuantType t) {
    switch (t) {
        case QuantType::Q8_0:
            return 34;
        case QuantType::Q4_0:
            return 18;
        case QuantType::Q4_K:
            return 144;
        case QuantType::Q5_K:
            return 176;
        case QuantType::Q6_K:
            return 210;
    }
    return 0;
}
// Bytes of a row of n elements (n a whole number of blocks).
inline size_t quant_row_bytes(QuantType t, int64_t n) {
    return size_t(n / quant_block_elems(t)) * quant_block_bytes(t);
}
inline const char* quant_name(QuantType t) {
    switch (t) {
        case QuantType::Q8_0:
            return "Q8_0";
        case QuantType::Q4_0:
            return "Q4_0";
        case QuantType::Q4_K:
            return "Q4_K";
        case QuantType::Q5_K:
            return "Q5_K";
        case QuantType::Q6_K:
            return "Q6_K";
    }
    return "?";
}

// A read-only block-quantized matrix [rows, cols]: row r starts at data + r * row_bytes (row_bytes >=
// quant_row_bytes(type, cols); cols a multiple of quant_block_elems(type)).
struct QuantMat {
    const void* data      = nullptr;
    QuantType   type      = QuantType::Q8_0;
    int64_t     rows      = 0;
    int64_t     cols      = 0;
    int64_t     row_bytes = 0;

    const void* row_ptr(int64_t r) const { return static_cast<const char*>(data) + r * row_bytes; }
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
