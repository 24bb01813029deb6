// Numbers for the JSON exporters: non-finite values become null (JSON has no NaN/inf), and floats are written in
// their shortest decimal form (number_text.h) that still reads back as the same float.
#pragma once
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "instrumentation/number_text.h"

namespace dyllm {

// The double nearest the float's shortest round-trip decimal form.
inline double float_for_json(float v) {
    if (!std::isfinite(v)) return double(v);
    return std::strtod(number_text(v).c_str(), nullptr);
}

inline nlohmann::ordered_json json_number(double v) {
    return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}
inline nlohmann::ordered_json json_float(float v) {
    return json_number(float_for_json(v));
}

}  // namespace dyllm
