// The length of the UTF-8 sequence that starts a byte of a string, for the views that show decoded token text
// (decoded_text.cpp, vocab.cpp): each keeps the valid sequences and marks the rest in its own way.
#pragma once
#include <cstddef>
#include <string>

namespace dyllm::app {

// Bytes of the multi-byte UTF-8 sequence starting at s[i] (2, 3 or 4) when its lead byte is a valid one and all its
// continuation bytes are there; 0 otherwise (an ASCII byte, a stray continuation byte, an overlong lead 0xC0/0xC1,
// a lead above U+10FFFF, or a sequence cut by the end of the string).
inline size_t utf8_sequence_length(const std::string& s, size_t i) {
    const unsigned char ch = static_cast<unsigned char>(s[i]);
    const size_t len = ch >= 0xF0 && ch < 0xF5 ? 4 : ch >= 0xE0 && ch < 0xF0 ? 3 : ch >= 0xC2 && ch < 0xE0 ? 2 : 0;
    if (len == 0 || i + len > s.size()) return 0;
    for (size_t j = 1; j < len; ++j)
        if ((static_cast<unsigned char>(s[i + j]) & 0xC0) != 0x80) return 0;
    return len;
}

}  // namespace dyllm::app
