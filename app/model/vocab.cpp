// Vocab display helpers: token text with whitespace made visible, "#id" fallback without a tokenizer.
#include "app/model/vocab.h"

#include "app/model/utf8_sequence.h"

namespace dyllm::app {

std::string visible_token_text(const std::string& s) {
    if (s.empty()) return "\xE2\x88\x85";  // U+2205 empty set: an empty token is still something
    bool all_space = true;
    for (char ch : s) all_space = all_space && ch == ' ';
    std::string out;
    if (all_space) {
        for (size_t i = 0; i < s.size(); ++i) out += "\xC2\xB7";  // U+00B7 middle dot per space
        return out;
    }
    static const char* kHex     = "0123456789abcdef";
    auto               hex_byte = [&](unsigned char ch) {
        out += "\\x";
        out += kHex[ch >> 4];
        out += kHex[ch & 15];
    };
    for (size_t i = 0; i < s.size();) {
        const unsigned char ch = static_cast<unsigned char>(s[i]);
        if (ch < 0x80) {
            if (ch == '\n')
                out += "\\n";
            else if (ch == '\t')
                out += "\\t";
            else if (ch == '\r')
                out += "\\r";
            else if (ch < 0x20 || ch == 0x7f)
                hex_byte(ch);
            else
                out += char(ch);
            ++i;
            continue;
        }
        // A byte-level BPE token may hold part of a multi-byte character: show invalid or truncated UTF-8 as \xNN
        // instead of letting the font draw '?'.
        if (const size_t len = utf8_sequence_length(s, i)) {
            out.append(s, i, len);
            i += len;
        } else {
            hex_byte(ch);
            ++i;
        }
    }
    return out;
}

std::string Vocab::display(int32_t id) const {
    if (id < 0) return "?";
    if (has_tokenizer && size_t(id) < text.size()) return visible_token_text(text[id]);
    std::string out = "#";  // appended, not "#" + ...: GCC 12 warns falsely (-Wrestrict) about that form
    out += std::to_string(id);
    return out;
}

}  // namespace dyllm::app
