// UTF-8 decoding/encoding and lossy repair (maximal-subpart U+FFFD substitution, Unicode 15 table 3-7).
#include "engine/tokenizer/utf8.h"

namespace dyllm {

bool utf8_next(std::string_view s, size_t& i, char32_t& cp) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
        cp = b0;
        ++i;
        return true;
    }
    // Lead byte -> sequence length and the allowed range of the second byte (Unicode table 3-7, well-formed UTF-8).
    int           len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        len = 2;
    } else if (b0 == 0xE0) {
        len = 3;
        lo  = 0xA0;
    } else if (b0 == 0xED) {
        len = 3;
        hi  = 0x9F;  // excludes the surrogates U+D800..DFFF
    } else if (b0 >= 0xE1 && b0 <= 0xEF) {
        len = 3;
    } else if (b0 == 0xF0) {
        len = 4;
        lo  = 0x90;
    } else if (b0 == 0xF4) {
        len = 4;
        hi  = 0x8F;  // nothing above U+10FFFF
    } else if (b0 >= 0xF1 && b0 <= 0xF3) {
        len = 4;
    } else {
        cp = kReplacementChar;  // 80..C1 and F5..FF never start a sequence
        ++i;
        return false;
    }
    char32_t v = b0 & (0xFF >> (len + 1));
    for (int k = 1; k < len; ++k) {
        if (i + k >= s.size()) {
            cp = kReplacementChar;
            i += k;
            return false;
        }
        const auto          b   = static_cast<unsigned char>(s[i + k]);
        const unsigned char klo = k == 1 ? lo : 0x80, khi = k == 1 ? hi : 0xBF;
        if (b < klo || b > khi) {
            cp = kReplacementChar;
            i += k;  // the maximal subpart ends before the offending byte, which starts the next attempt
            return false;
        }
        v = (v << 6) | (b & 0x3F);
    }
    cp = v;
    i += len;
    return true;
}

void utf8_append(std::string& out, char32_t cp) {
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = kReplacementChar;
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

bool utf8_valid(std::string_view s) {
    size_t   i = 0;
    char32_t cp;
    while (i < s.size())
        if (!utf8_next(s, i, cp)) return false;
    return true;
}

std::string utf8_sanitize(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    size_t   i = 0;
    char32_t cp;
    while (i < s.size()) {
        const size_t start = i;
        if (utf8_next(s, i, cp))
            out.append(s.substr(start, i - start));
        else
            utf8_append(out, kReplacementChar);
    }
    return out;
}

size_t utf8_length(std::string_view s) {
    size_t   n = 0, i = 0;
    char32_t cp;
    while (i < s.size()) {
        utf8_next(s, i, cp);
        ++n;
    }
    return n;
}

}  // namespace dyllm
