// Block-quantized storage types of weights and embedding tables, and the read-only matrix descriptor of one, for the
// quantized CPU kernels (kernels/ must not see engine/tensor.h; the block layouts are in kernels/cpu/ref/quant.h).
#pragma once
#include <cstddef>
#include <cstdint>

namespace dyllm::cpu {

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

}  // namespace dyllm::cpu
