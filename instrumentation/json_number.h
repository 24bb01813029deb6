// float -> double for JSON writers: the double nearest the float's shortest decimal form, so a tau of 0.99f is
// written as 0.99 rather than 0.9900000095367432, and reading it back as float gives the same float (round trip).
#pragma once
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace dyllm {

inline double float_for_json(float v) {
    if (!std::isfinite(v)) return double(v);
    char buf[32];
    const auto res = std::to_chars(buf, buf + sizeof(buf) - 1, v);  // shortest repr that round-trips as float
    *res.ptr = '\0';
    return std::strtod(buf, nullptr);
}

}  // namespace dyllm
