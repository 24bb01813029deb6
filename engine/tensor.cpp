// Out-of-line helpers of tensor.h: shape_string for error messages and logs.
#include "engine/tensor.h"

namespace dyllm {

// Outermost dimension first, as in torch/safetensors: a [rows, cols] matrix prints "[rows, cols]"; dimensions 2 and 3
// are printed only when they are not 1.
std::string shape_string(const TensorView& v) {
    std::string s = "[";
    for (int d = 3; d >= 2; --d) {
        if (v.ne[d] != 1) s += std::to_string(v.ne[d]) + ", ";
    }
    s += std::to_string(v.ne[1]) + ", " + std::to_string(v.ne[0]) + "]";
    return s;
}

}  // namespace dyllm
