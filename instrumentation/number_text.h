// The one float formatter of the exporters and the app: the shortest decimal text that reads back as the same value
// (std::to_chars), a float as a float (0.99f -> "0.99", not 0.9900000095367432) and a double as a double.
#pragma once
#include <charconv>
#include <string>

namespace dyllm {

// Non-finite values come out as "nan", "inf", "-inf" (callers that cannot hold them, JSON and CSV, check first).
inline std::string number_text(float v) {
    char buf[32];
    return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}
inline std::string number_text(double v) {
    char buf[32];
    return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}
// At most `significant` digits, as printf's %.*g: for derived values (seconds -> ms) whose last bits are arithmetic
// noise that the shortest round-trip form would show (4.639047000000001).
inline std::string number_text(double v, int significant) {
    char buf[64];
    return std::string(buf, std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, significant).ptr);
}

}  // namespace dyllm
