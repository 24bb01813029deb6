// The engine's quantized DTypes as the kernels' QuantType (kernels/ never sees engine/tensor.h).
#pragma once
#include <string>

#include "engine/errors.h"
#include "engine/tensor.h"
#include "kernels/cpu/mat.h"
#include "kernels/cpu/quant_type.h"

namespace dyllm {

inline cpu::QuantType quant_of(DType t) {
    switch (t) {
        case DType::Q8_0:
            return cpu::QuantType::Q8_0;
        case DType::Q4_0:
            return cpu::QuantType::Q4_0;
        case DType::Q4_K:
            return cpu::QuantType::Q4_K;
        case DType::Q5_K:
            return cpu::QuantType::Q5_K;
        case DType::Q6_K:
            return cpu::QuantType::Q6_K;
        default:
            break;
    }
    DYLLM_ASSERT(false, std::string("no quantized storage type for ") + dtype_name(t));
}

}  // namespace dyllm
