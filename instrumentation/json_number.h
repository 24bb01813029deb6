// Numbers for the JSON exporters: non-finite values become null (JSON has no NaN/inf), and floats are written in
// their shortest decimal form (a tau of 0.99f as 0.99, not 0.9900000095367432) that still reads back as the same float.
#pragma once
#include <charconv>
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace dyllm {

// The double nearest the float's shortest round-trip decimal form.
inline double float_for_json(float v) {
    if (!std::isfinite(v)) return double(v);
    char buf[32];
    const auto res = std::to_chars(buf, buf + sizeof(buf) - 1, v);
    *res.ptr = '\0';
    return std::strtod(buf, nullptr);
}

inline nlohmann::ordered_json json_number(double v) {
    return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}
inline nlohmann::ordered_json json_float(float v) { return json_number(float_for_json(v)); }

}  // namespace dyllm
