// The GPT-2 byte <-> unicode table, built from its definition (openai/gpt-2 src/encoder.py bytes_to_unicode).
#include "engine/tokenizer/byte_unicode.h"

#include "engine/tokenizer/utf8.h"

namespace dyllm {

namespace {

struct Tables {
    std::array<char32_t, 256> fwd{};
    std::array<int16_t, 512>  inv{};  // every table code point is < 0x100 + 68 < 512

    Tables() {
        inv.fill(-1);
        auto printable = [](int b) {
            return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        };
        int n = 0;
        for (int b = 0; b < 256; ++b) {
            fwd[b]      = printable(b) ? char32_t(b) : char32_t(256 + n++);
            inv[fwd[b]] = int16_t(b);
        }
    }
};

const Tables& tables() {
    static const Tables t;
    return t;
}

}  // namespace

const std::array<char32_t, 256>& byte_to_unicode_table() {
    return tables().fwd;
}

int unicode_to_byte(char32_t cp) {
    return cp < 512 ? tables().inv[cp] : -1;
}

std::string bytes_to_unicode_string(std::string_view bytes) {
    const auto& fwd = tables().fwd;
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char b : bytes) utf8_append(out, fwd[b]);
    return out;
}

bool unicode_string_to_bytes(std::string_view token, std::string& out) {
    const size_t mark = out.size();
    size_t       i    = 0;
    char32_t     cp;
    while (i < token.size()) {
        const int b = utf8_next(token, i, cp) ? unicode_to_byte(cp) : -1;
        if (b < 0) {
            out.resize(mark);
            return false;
        }
        out.push_back(static_cast<char>(b));
    }
    return true;
}

}  // namespace dyllm
